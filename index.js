'use strict'

const LoadBalancer = require('./lib/master/load-balancer')
const Worker = require('./workers/worker')
const protocols = require('./lib/protocols')
const { strategies } = require('./lib/master/distribution')
const { FRAMINGS } = require('./lib/protocols/framing')
const { accountedFor } = require('./lib/master/counters')
const exceptions = require('./exceptions')

module.exports = {
  LoadBalancer,
  Worker,
  protocols,
  strategies,
  FRAMINGS,
  accountedFor,
  ...exceptions
}

// The rest is loaded when first used, so that a process does not pay for
// what it does not use (mongoose, the config parser, the decoders).
const lazy = {
  ArgvConfig: () => require('./configs/argv-config'),
  LoadBalancerConfig: () => require('./configs/load-balancer-config'),
  MongoCollectorConfig: () => require('./lib/collector/mongo-collector-config'),
  flagTypes: () => require('./lib/shared/value-types').flagTypes,
  MongoCollector: () => require('./lib/collector/mongo-collector'),
  defineCollector: () => require('./lib/collector/define-collector').defineCollector,
  sinks: () => require('./lib/collector/sinks'),
  MongoWorker: () => require('./workers/mongo-worker'),
  CounterWorker: () => require('./workers/counter-worker'),
  StreamWorker: () => require('./workers/stream-worker'),
  CounterStore: () => require('./workers/storage/counter-store').CounterStore,
  StreamSweeper: () => require('./workers/storage/stream-sweeper'),
  resolveMongo: () => require('./lib/mongo/resolve-mongo').resolveMongo,
  parseSyslog: () => require('./collectors/syslog/parser').parseSyslog,
  encodeSdName: () => require('./collectors/syslog/sd-names').encodeSdName,
  decodeSdName: () => require('./collectors/syslog/sd-names').decodeSdName,
  decodeRtcp: () => require('./collectors/rtcp/decoder').decodeRtcp,
  encodeRtcp: () => require('./collectors/rtcp/encoder').encodeRtcp
}
for (const [name, load] of Object.entries(lazy)) {
  Object.defineProperty(module.exports, name, { enumerable: true, get: load })
}
