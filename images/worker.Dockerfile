# The agora worker image, for users who have a registry. Build from the
# repository root:
#
#   docker build -f images/worker.Dockerfile -t agora-worker:$(git rev-parse --short HEAD) .
#
# Without a registry, `agora image build` (package images) makes the same
# image from a locally compiled worker: keep the final stage in step with
# images.Dockerfile("") (TestWorkerDockerfileInStep checks USER, WORKDIR,
# ENTRYPOINT and ENV).
#
# To put the worker into your own image (one with Claude Code installed, say):
#
#   COPY --from=agora-worker:TAG /usr/local/bin/agora-worker /usr/local/bin/agora-worker
#   ENTRYPOINT ["/usr/local/bin/agora-worker"]

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends busybox-static ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
      -o /rootfs/usr/local/bin/agora-worker ./cmd/agora-worker
# The rest of the scratch file system: the agora user (65532), CA
# certificates, /tmp (1777), and busybox as /bin/sh with every applet linked.
RUN set -eu; \
    mkdir -p /rootfs/bin /rootfs/etc/ssl/certs /rootfs/tmp /workspace-dir; \
    chmod 1777 /rootfs/tmp; \
    chown 65532:65532 /workspace-dir; \
    cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/; \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nagora:x:65532:65532:agora:/tmp:/bin/sh\n' > /rootfs/etc/passwd; \
    printf 'root:x:0:\nnobody:x:65534:\nagora:x:65532:\n' > /rootfs/etc/group; \
    printf 'hosts: files dns\n' > /rootfs/etc/nsswitch.conf; \
    cp /bin/busybox /rootfs/bin/busybox; \
    for applet in $(/bin/busybox --list-full); do \
      case "$applet" in */*) ;; *) continue ;; esac; \
      [ "$applet" = bin/busybox ] && continue; \
      mkdir -p "/rootfs/$(dirname "$applet")"; \
      ln -sf /bin/busybox "/rootfs/$applet"; \
    done

FROM scratch
COPY --from=build /rootfs/ /
COPY --from=build --chown=65532:65532 /workspace-dir /workspace
ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin
USER 65532:65532
WORKDIR /workspace
VOLUME ["/tmp", "/workspace"]
ENTRYPOINT ["/usr/local/bin/agora-worker"]
