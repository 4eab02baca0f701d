# The b4box server as an image (docs/install.md "Container image"). It installs the Debian
# packages `dpkg-buildpackage -b` made (put them in debs/ beside this file):
#
#   dpkg-buildpackage -us -uc -b && mkdir -p debs && mv ../*.deb debs/
#   docker build -t b4box .
#   docker run -d -v /var/run/docker.sock:/var/run/docker.sock -v /run/b4box:/run/b4box b4box
#   curl --unix-socket /run/b4box/b4box.sock http://b4/healthz
#
# The default config (below) serves the Docker provider (the host's daemon, through its
# socket) on /run/b4box/b4box.sock. To serve TCP, mount your own /etc/b4box/b4box.json with a
# threadAccess block (a non-loopback listener is refused without one) and publish the port.
# The native provider needs a privileged container (namespaces, cgroups, mounts):
# --privileged --cgroupns=host, and "type": "native".
# BASE: any Debian 12 image; tests/install/t0003-deb.sh builds it offline on a local one.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
COPY debs/ /tmp/debs/
RUN dpkg -i /tmp/debs/b4box_*.deb /tmp/debs/libb4box0_*.deb || \
        (apt-get update && apt-get install -y --no-install-recommends -f) && \
    rm -rf /tmp/debs /var/lib/apt/lists/*
# The default: the Docker provider through the host daemon's socket, the API on a unix socket
# in /run/b4box (bind-mount it: -v /run/b4box:/run/b4box), which needs no token.
RUN mkdir -p /etc/b4box /var/lib/b4box /run/b4box && \
    printf '%s\n' '{"server": {"listen": "unix:/run/b4box/b4box.sock"},' \
        ' "sandbox": {"provider": {"type": "docker", "scope": "b4box"}}}' \
        > /etc/b4box/b4box.json
WORKDIR /etc/b4box
VOLUME /var/lib/b4box
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/b4box", "--state", "/var/lib/b4box"]
CMD ["serve"]
