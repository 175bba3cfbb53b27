'use strict'

const LoadBalancer = require('./lib/master/load-balancer')
const Worker = require('./workers/worker')
const protocols = require('./lib/protocols')
const { strategies } = require('./lib/master/distribution')
const { FRAMINGS } = require('./lib/protocols/framing')
const exceptions = require('./exceptions')

module.exports = {
  LoadBalancer,
  Worker,
  protocols,
  strategies,
  FRAMINGS,
  ...exceptions
}

// Loaded lazily so that a process does not pay for what it does not use
// (mongoose, the config parser, the launcher).
const lazy = {
  LoadBalancerConfig: () => require('./configs/load-balancer-config'),
  StreamWorker: () => require('./workers/stream-worker'),
  CounterStore: () => require('./workers/storage/counter-store').CounterStore,
  StreamSweeper: () => require('./workers/storage/stream-sweeper'),
  resolveMongo: () => require('./lib/mongo/resolve-mongo').resolveMongo
}
for (const [name, load] of Object.entries(lazy)) {
  Object.defineProperty(module.exports, name, { enumerable: true, get: load })
}
