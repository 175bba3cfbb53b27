'use strict'
// A collector module: what `collector run ./examples/metrics-collector`
// loads. `Collector` extends LoadBalancer (here through MongoCollector),
// `Config` extends LoadBalancerConfig (through MongoCollectorConfig).
module.exports = {
  Collector: require('./metrics-collector'),
  Config: require('./metrics-config'),
  description: 'statsd-style metrics (name:value|c|g|ms) into per-minute counters in MongoDB'
}
