#!/bin/sh
# Kafka's kafka-broker-api-versions.sh (the compose file's health check of the broker).
exec java -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties \
  -cp '/opt/kafka/libs/*:/opt/kafka/tools/*' org.apache.kafka.tools.BrokerApiVersionsCommand "$@"
