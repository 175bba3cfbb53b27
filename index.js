'use strict'

const LoadBalancer = require('./lib/load-balancer')
const Worker = require('./workers/worker')
const protocols = require('./lib/protocols')
const { strategies } = require('./lib/distribution')
const { FRAMINGS } = require('./lib/framing')
const exceptions = require('./exceptions')

module.exports = {
  LoadBalancer,
  Worker,
  protocols,
  strategies,
  FRAMINGS,
  ...exceptions
}

// Loaded lazily so that a worker process does not pay for what it does not use.
Object.defineProperty(module.exports, 'LoadBalancerConfig', {
  enumerable: true,
  get: () => require('./configs/load-balancer-config')
})
