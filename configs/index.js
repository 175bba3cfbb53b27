'use strict'

/**
 * Argv config classes: `LoadBalancerConfig` (extend it for a collector)
 * and `flagTypes`, the value types a flag's `type` may name.
 */
module.exports = {
  LoadBalancerConfig: require('./load-balancer-config'),
  flagTypes: require('./flag-types').flagTypes
}
