'use strict'

const path = require('node:path')
const { MongoCollectorConfig } = require('collector-cluster')

// The metric-name prefix: empty, or what statsd names allow, ending in '.'.
const PREFIX = /^([A-Za-z0-9_-]+\.)*$/

/** The base flags with this collector's defaults, plus `--prefix`. */
class MetricsConfig extends MongoCollectorConfig {
  static usage = 'collector run ./examples/metrics-collector [options]'
  static flags = MongoCollectorConfig.extendFlags({
    name: { default: 'metrics' },
    port: { default: 8125 },
    distribution: { default: 'hash' },
    workername: { required: false, default: path.join(__dirname, 'metrics-worker.js') },
    prefix: {
      type: 'string',
      default: '',
      env: 'METRICS_PREFIX',
      group: 'Metrics',
      description: 'prepended to every metric name, e.g. "prod."',
      validate: (prefix) => PREFIX.test(prefix) ? undefined : 'must be dot-separated name parts ending in "." (letters, digits, "_", "-")'
    }
  })
}

module.exports = MetricsConfig
