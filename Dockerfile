# Shoal in a container: a drop-in for amazon/dynamodb-local.
#
#   docker build -t shoal .
#   docker run -p 8000:8000 -v shoal-data:/data shoal
#
# The build stage compiles a static musl binary; the image holds that binary alone (no shell,
# no libc, no curl), so its health check is `shoal health`.

FROM rust:1-slim AS build
# mimalloc is C: compiling it for musl needs musl-gcc.
RUN apt-get update \
    && apt-get install -y --no-install-recommends musl-tools \
    && rm -rf /var/lib/apt/lists/*
RUN rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY . .
RUN cargo build --release --locked --target x86_64-unknown-linux-musl --bin shoal \
    && cp target/x86_64-unknown-linux-musl/release/shoal /shoal

FROM scratch
COPY --from=build /shoal /shoal
# Relative paths (DynamoDB Local's `-dbPath .`, Shoal's default ./shoal-data) land in the
# volume too.
WORKDIR /data
VOLUME /data
EXPOSE 8000
# Checks the default port; a command that serves on another port needs its own check.
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 \
    CMD ["/shoal", "health", "--endpoint", "http://127.0.0.1:8000", "--timeout-seconds", "3"]
ENTRYPOINT ["/shoal"]
# All interfaces: inside a container, loopback would be unreachable from the host.
CMD ["serve", "--host", "0.0.0.0", "--port", "8000", "--data-dir", "/data"]
