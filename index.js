'use strict'

// The public API: a collector is a definition (`defineCollector`, `sinks`);
// beneath it, one documented layer, a `LoadBalancer` and its `Worker`s, for
// a balancer whose workers store wherever they like (docs/writing-collectors.md).
// The classes a definition is built from (MongoCollector, MongoWorker, the
// sinks' stores) are internal.
//
// Everything but the errors is loaded when first used, destructured or
// not, so that a process pays only for what it uses: a worker that takes
// `Worker` loads none of the master's code, the master neither mongoose
// nor the decoders.
const exceptions = require('./exceptions')

module.exports = { ...exceptions }

const lazy = {
  LoadBalancer: () => require('./lib/master/load-balancer'),
  Worker: () => require('./workers/worker'),
  protocols: () => require('./lib/protocols'),
  strategies: () => require('./lib/master/distribution').strategies,
  batchEntry: () => require('./lib/shared/batch-entry'),
  FRAMINGS: () => require('./lib/protocols/framing').FRAMINGS,
  accountedFor: () => require('./lib/master/counters').accountedFor,
  ArgvConfig: () => require('./configs/argv-config'),
  LoadBalancerConfig: () => require('./configs/load-balancer-config'),
  flagTypes: () => require('./lib/shared/value-types').flagTypes,
  defineCollector: () => require('./lib/collector/define-collector').defineCollector,
  sinks: () => require('./lib/collector/sinks'),
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
