#!/bin/sh
# Kafka's kafka-topics.sh: the tool's class on the broker's and the tools' jars.
exec java -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties \
  -cp '/opt/kafka/libs/*:/opt/kafka/tools/*' org.apache.kafka.tools.TopicCommand "$@"
