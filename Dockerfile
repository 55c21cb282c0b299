# perfplan's image, for the Kubernetes manifests of `perfplan k8s` (and any container
# engine): a build stage with the Rust toolchain, a small runtime stage with the binary,
# CA certificates for https:// endpoints, and a user of its own.
#
#   docker build -t perfplan:0.1.0 .
#   docker run --rm perfplan:0.1.0 --help
#
# Not built on the machines perfplan is developed on (they have no container engine);
# `hadolint Dockerfile` checks it there.

FROM rust:1.85-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
RUN cargo build --release --locked --bin perfplan \
    && strip target/release/perfplan

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates=20230311* \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 perfplan
COPY --from=build /src/target/release/perfplan /usr/local/bin/perfplan
USER 10001
WORKDIR /home/perfplan
# The start barrier's port (shard 1 listens on it; see `perfplan run --barrier`).
EXPOSE 7313
ENTRYPOINT ["perfplan"]
CMD ["--help"]
