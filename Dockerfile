# One image for every Mars process (mapper, reducer, api, spark jobs); the command picks the role.

# The Spark-Kafka connector jars, from the same Maven description `make setup` uses, so
# `mars spark preagg` runs inside the image as it does on a developer's machine.
FROM maven:3.9-eclipse-temurin-17 AS jars
COPY scripts/jars /build/jars
RUN mvn -q -B -s /build/jars/settings.xml -f /build/jars/spark-kafka/pom.xml \
        dependency:copy-dependencies -DoutputDirectory=/jars/spark-kafka

# The mapper's native Kafka consumer (native/, Rust + librdkafka built from source) as a wheel.
FROM python:3.11-slim AS native
RUN apt-get update && apt-get install -y --no-install-recommends curl build-essential \
        libssl-dev zlib1g-dev pkg-config perl python3-dev \
    && curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal \
    && rm -rf /var/lib/apt/lists/*
ENV PATH=/root/.cargo/bin:$PATH
COPY native /build/native
RUN pip install --no-cache-dir maturin && maturin build --release -m /build/native/Cargo.toml \
        -o /wheels

FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/mars
COPY pyproject.toml README.md scripts/constraints.txt ./
COPY mars ./mars
COPY mapper ./mapper
COPY reducer ./reducer
COPY spark ./spark
COPY api ./api
COPY devtools ./devtools
COPY cli ./cli
COPY configs ./configs
RUN pip install --no-cache-dir -c constraints.txt .
COPY --from=native /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
COPY --from=jars /jars /opt/mars/jars
ENV MARS_CONFIG_FILE=/opt/mars/configs/mars.toml \
    MARS_LOCAL__JARS_DIR=/opt/mars/jars
CMD ["mars", "--help"]
