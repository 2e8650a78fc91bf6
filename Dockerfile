# One image for every Mars process (mapper, reducer, api, spark jobs); the command picks the role.
FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/mars
COPY pyproject.toml README.md ./
COPY mars ./mars
COPY mapper ./mapper
COPY reducer ./reducer
COPY api ./api
COPY configs ./configs
RUN pip install --no-cache-dir .
ENV MARS_CONFIG_FILE=/opt/mars/configs/mars.toml
CMD ["mars", "--help"]
