'use strict'
// A collector definition: what `collector run ./examples/metrics-collector`
// loads. One object says where it listens, its settings, how a line is
// decoded and where records are stored; the framework does the rest
// (workers, buffering, exactly-once writes, acknowledgement on store).
const { defineCollector, sinks } = require('collector-cluster')
const { decodeMetric, metricName } = require('./metrics-decoder')

module.exports = defineCollector({
  name: 'metrics',
  description: 'statsd-style metrics (name:value|c|g|ms) into per-minute counters in MongoDB',
  usage: 'collector run ./examples/metrics-collector [options]',
  // Each line of a datagram is a message, sent to a worker by its metric name.
  listen: { port: 8125, split: 'lines' },
  key: (data) => metricName(data),
  settings: {
    prefix: {
      type: 'string',
      default: '',
      group: 'Metrics',
      description: 'prepended to every metric name, e.g. "prod."',
      validate: (prefix) => /^([A-Za-z0-9_-]+\.)*$/.test(prefix) ? undefined : 'must be dot-separated name parts ending in "." (letters, digits, "_", "-")'
    }
  },
  decode: (message, settings) => {
    const metric = decodeMetric(message.data.toString('utf8'))
    metric.name = settings.prefix + metric.name
    return metric
  },
  // Per minute: `c` → <name> += value / rate; `g` and `ms` → <name>.sum += value, <name>.count += 1.
  sinks: [sinks.counters({
    of: (metric) => metric.type === 'c'
      ? { metric: metric.name, n: metric.value / metric.rate }
      : [{ metric: `${metric.name}.sum`, n: metric.value }, { metric: `${metric.name}.count` }]
  })]
})
