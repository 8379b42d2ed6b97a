# The `agora serve` image, for users who have a registry (docs/image.md).
# Multi-stage: build both binaries static, ship them on scratch with CA
# certificates, a writable /tmp and busybox. Build it (either builder,
# BuildKit or the classic one) with the version stamped, as `make image`
# does:
#   docker build --build-arg VERSION="$(git describe --always --dirty)" -t agora .
# GO_IMAGE names the Go image to build with (default golang:1.26); where it
# cannot be pulled, .ci/golang-image makes a local stand-in from Debian's
# debootstrap and this host's Go: --build-arg GO_IMAGE=agora-test-golang:1.26.8.
#
# Run it with the Docker socket, the data directory mounted at the same
# path as on the host (the runner bind-mounts files from it into dispatch
# containers by host path; agora refuses to start otherwise), owned by the
# image's user 65532, and a token (its hash in a file there):
#   sudo install -d -m 0700 -o 65532 -g 65532 /var/lib/agora
#   docker run --rm agora token create ci   # the secret, and the line below
#   echo 'ci:sha256=…' | sudo install -m 0600 -o 65532 -g 65532 /dev/stdin /var/lib/agora/tokens
#   docker run -d --name agora --restart unless-stopped \
#     -v /var/run/docker.sock:/var/run/docker.sock \
#     --group-add "$(stat -c %g /var/run/docker.sock)" \
#     -v /var/lib/agora:/var/lib/agora -e AGORA_DATA_DIR=/var/lib/agora \
#     -e AGORA_TOKENS_FILE=/var/lib/agora/tokens -p 7070:7070 agora serve
# --group-add lets 65532 use the socket. The worker image that dispatches
# run in is built apart: `agora serve` builds it through the Docker API
# from the agora-worker beside it, or `agora image build` does
# (images/worker.Dockerfile is the same with a registry).
# images/dockerfile_test.go keeps this file's layout in step with the images
# package; test/serveimage.TestServeImage builds it and runs a task that asks, is
# answered and resumes in it.
ARG GO_IMAGE=golang:1.26
FROM ${GO_IMAGE} AS build
# busybox-static: `agora serve` builds the worker image from the agora-worker
# beside it and puts a static busybox in as /bin/sh when /bin/busybox exists.
RUN apt-get update \
 && apt-get install -y --no-install-recommends busybox-static ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/agora ./cmd/agora && \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/agora-worker ./cmd/agora-worker
# The rest of the file system: /tmp (1777) for whatever needs a temp file,
# and the default data dir, private to 65532 (a mount replaces it).
RUN mkdir -p /rootfs/tmp /rootfs/var/lib/agora \
 && chmod 1777 /rootfs/tmp \
 && chmod 0700 /rootfs/var/lib/agora \
 && chown 65532:65532 /rootfs/var/lib/agora

FROM scratch
ARG VERSION=dev
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/agora /out/agora-worker /usr/local/bin/
COPY --from=build /bin/busybox /bin/busybox
COPY --from=build /rootfs/ /
ENV AGORA_DATA_DIR=/var/lib/agora AGORA_LISTEN=0.0.0.0:7070 TMPDIR=/tmp
LABEL org.opencontainers.image.title="agora" org.opencontainers.image.version="${VERSION}"
USER 65532:65532
EXPOSE 7070
# `agora health` GETs /healthz on the listener $AGORA_LISTEN names.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/usr/local/bin/agora", "health"]
ENTRYPOINT ["/usr/local/bin/agora"]
CMD ["serve"]
