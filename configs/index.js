'use strict'

/**
 * Argv config classes: `ArgvConfig` (the generic engine), `LoadBalancerConfig`
 * (extend it for a collector) and `flagTypes`, the value types a flag's
 * `type` may name. `MongoCollectorConfig` lives beside the Mongo collector
 * (lib/collector/mongo-collector-config.js): configs/ imports nothing above it.
 */
module.exports = {
  ArgvConfig: require('./argv-config'),
  LoadBalancerConfig: require('./load-balancer-config'),
  flagTypes: require('../lib/shared/value-types').flagTypes
}
