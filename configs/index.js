'use strict'

/**
 * Argv config classes: `ArgvConfig` (the generic engine), `LoadBalancerConfig`
 * (extend it for a collector), `MongoCollectorConfig` (for a collector that
 * stores into MongoDB) and `flagTypes`, the value types a flag's `type` may name.
 */
module.exports = {
  ArgvConfig: require('./argv-config'),
  LoadBalancerConfig: require('./load-balancer-config'),
  MongoCollectorConfig: require('./mongo-collector-config'),
  flagTypes: require('./flag-types').flagTypes
}
