# The `agora serve` image, for users who have a registry. Multi-stage: build
# both binaries static, ship them on scratch. Run it with the Docker socket
# mounted and a token, e.g.
#   docker run -v /var/run/docker.sock:/var/run/docker.sock \
#     --group-add "$(stat -c %g /var/run/docker.sock)" \
#     -v /var/lib/agora:/var/lib/agora -p 7070:7070 \
#     IMAGE serve --data-dir /var/lib/agora --listen 0.0.0.0:7070 --token ci:SECRET
# The data directory must be mounted at the same path as on the host (the
# runner bind-mounts workspaces from it into dispatch containers by host
# path) and be writable by 65532; --group-add lets that user use the socket.
# The worker image that dispatches run in is built apart: `agora serve` builds
# it through the Docker API from the agora-worker beside it, or `agora image
# build` does (images/worker.Dockerfile is the same with a registry).
# images/dockerfile_test.go keeps this file's layout in step with the images
# package.
FROM golang:1.26 AS build
# busybox-static: `agora serve` builds the worker image from the agora-worker
# beside it and puts a static busybox in as /bin/sh when /bin/busybox exists.
RUN apt-get update \
 && apt-get install -y --no-install-recommends busybox-static \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o /out/agora ./cmd/agora && \
    CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o /out/agora-worker ./cmd/agora-worker

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/agora /out/agora-worker /usr/local/bin/
COPY --from=build /bin/busybox /bin/busybox
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/agora"]
CMD ["serve", "--help"]
