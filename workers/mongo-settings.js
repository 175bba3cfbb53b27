'use strict'

const { declareSettings } = require('../lib/shared/settings')
const { RISKS } = require('../lib/mongo/server-identity')
const { databaseNameProblem } = require('../lib/mongo/database-name')
const { retentionProblem, retentionForProblem } = require('./storage/retention')

/*
 * The settings of the workers that write to MongoDB, declared once (the
 * shape of lib/master/options.js, see lib/shared/settings.js): the workers
 * take their defaults from here, a collector's config its flags, a
 * collector the keys it forwards to its workers (those without
 * `flag: false`, which only code passes, in `workerOptions`).
 */

/** Every MongoDB-writing worker (MongoWorker). */
const MONGO_SETTINGS = declareSettings({
  mongoUri: {
    type: 'string',
    secret: true,
    // Where `collector start` moves it: flags of a PM2 process show in ps.
    env: 'COLLECTOR_MONGO_URI',
    group: 'Storage',
    description: 'MongoDB URI without a password (else MONGODB_URI; else a local or embedded server)'
  },
  // No default: a value given must be told apart from none, when the URI's
  // database wins (lib/collector/mongo-collector.js).
  database: { type: 'string', validate: databaseNameProblem, group: 'Storage', description: 'database name (default: the one the URI names, else collector)' },
  flushInterval: { type: 'duration', default: 250, range: [1, 3600000], group: 'Storage', description: 'how long updates are coalesced before one bulk write' },
  allowServer: { type: 'list', default: [], choices: () => Object.keys(RISKS), group: 'Storage', description: 'write to a server known to break a guarantee the collector relies on (ferretdb: concurrent updates to one document are not atomic); without it such a server is refused, nothing written' },
  maxPending: { type: 'integer', default: 100000, range: [1, 1e9], group: 'Storage', description: 'entries (documents, updates) each sink of a worker holds before they are written: while the database is away or slower than the input a batch waits for room; one message whose entries alone are over it is dropped (workerFull): keep it above --batch-size times the records a message gives' },
  flushTimeout: { flag: false, type: 'duration', default: 20000, range: [0, 86400000], group: 'Storage', description: 'how long flush() on stop keeps retrying' },
  serverSelectionTimeoutMS: { flag: false, type: 'duration', default: 5000, range: [1, 3600000], group: 'Storage', description: 'the driver\'s wait for a server; a write running longer shows as dbStalled' },
  dbRetryDelay: { flag: false, type: 'duration', default: 200, range: [1, 3600000], group: 'Storage', description: 'first retry of a failed database connect or write (doubles, at most 5 s); the listener has its own, retryDelay' },
  // Off by default: a collector started on an existing database deletes
  // nothing its users kept, and says at start that nothing expires
  // (docs/storage.md, Retention).
  retention: { type: 'duration', default: 0, validate: retentionProblem, group: 'Retention', description: 'delete what is older than this (30s, 12h, 7d) in every collection the collector writes, each by its own date field (a stream or call by its last activity); 0: nothing expires, said at start' },
  retentionFor: { type: 'list', default: [], validate: retentionForProblem, group: 'Retention', description: 'per-collection retention over --retention: COLLECTION=DURATION or COLLECTION=off, e.g. flows=7d,flow_minutes=90d' },
  maxStorage: { type: 'size', default: 0, group: 'Retention', description: 'storage budget of the collector\'s collections, data and indexes as the server reports them (e.g. 10g): over it the oldest day of every collection is deleted first, logged and counted; 0: none' },
  storageInterval: { type: 'duration', default: 60000, range: [100, 86400000], group: 'Retention', description: 'how often the leader worker measures the collections and holds them to maxStorage; it sweeps expired documents at least every tenth of the shortest retention' },
  retentionBy: { flag: false, type: 'string', default: 'auto', choices: ['auto', 'ttl', 'sweeper'], group: 'Retention', description: 'how documents expire: TTL indexes where the server has a TTL monitor (auto), else range deletes by the leader worker' }
})

/**
 * The workers of a definition that declares `cardinality(record)`
 * (lib/collector/define-collector.js): the cap on the new keys its
 * records bring (workers/new-key-limit.js). The default takes a collector's
 * first minute of 50,000 names (every key is new to a worker that starts)
 * while bounding a sender that makes up names.
 */
const NEW_KEY_SETTINGS = declareSettings({
  maxNewKeysPerMinute: { type: 'integer', default: 50000, range: [0, 1e9], group: 'Workers', description: 'new keys (StatsD: metric name and type) the collector takes per minute, an even share per worker; records bringing more are refused (dropped.newKeyLimit), keys already known always pass; 0: no cap' },
  maxKnownKeys: { type: 'integer', default: 100000, range: [1, 1e8], group: 'Workers', description: 'keys each worker remembers as known for maxNewKeysPerMinute (the least recently seen is forgotten, and new again when it comes back)' },
  newKeyShares: { flag: false, type: 'integer', default: 1, range: [1, 1024], group: 'Workers', description: 'how many workers share maxNewKeysPerMinute (the collector sets its instances)' }
})

/** Counters of the CounterStore: one document per metric per UTC day. */
const COUNTER_STORE_SETTINGS = {
  countersCollection: { flag: false, type: 'string', default: 'counters', group: 'Storage', description: 'collection of the per-minute counters' },
  preallocateRate: { flag: false, type: 'number', default: 0.001, range: [0, 1], group: 'Storage', description: 'probability per counter write of preallocating the next day\'s document' }
}

/**
 * A definition's counters sink (lib/collector/sinks.js counters): how long
 * its increments are coalesced. A counter document is one upsert however
 * many messages it counts, so a longer window writes fewer of them (with
 * ~1,760 host × severity pairs at 5,000 lines/s a worker, 0.7 upserts a
 * line at the 250 ms flush); the messages are acknowledged once their
 * counts are written, so it also holds them longer (within memoryBudget).
 */
const COUNTERS_INTERVAL = { type: 'duration', default: 1000, range: [0, 3600000], group: 'Storage', description: 'how long the per-minute counters\' increments are coalesced before their upserts (written sooner when input pauses, and on stop; 0: every flush); the messages they count are acknowledged once written' }

/** CounterWorker: counts only. */
const COUNTER_SETTINGS = declareSettings({
  ...MONGO_SETTINGS,
  ...COUNTER_STORE_SETTINGS,
  preallocateRate: { ...COUNTER_STORE_SETTINGS.preallocateRate, default: 0 }
})

/** StreamWorker: race-free stream upserts, ended by the sweeper. */
const STREAM_SETTINGS = declareSettings({
  ...MONGO_SETTINGS,
  ...COUNTER_STORE_SETTINGS,
  streamTimeout: { type: 'duration', default: 60000, range: [1, 86400000], group: 'Storage', description: 'end a stream after this long without a report' },
  byeGrace: { type: 'duration', default: 5000, range: [0, 86400000], group: 'Storage', description: 'after a BYE, end the stream once quiet this long' },
  streamSegment: { type: 'duration', default: 86400000, range: [0, 604800000], group: 'Storage', description: 'a stream whose reports span this long is ended as a segment and its next report starts the next one, so that no stream document outgrows MongoDB\'s 16 MiB (an RTCP stream\'s grows about 1 KB a minute); 0: never' },
  streamsCollection: { flag: false, type: 'string', default: 'streams', group: 'Storage', description: 'collection of the streams' },
  maxStreamsPerFlush: { flag: false, type: 'integer', default: 5000, range: [1, 1e9], group: 'Storage', description: 'distinct pending streams that trigger an early flush' },
  sweepInterval: { flag: false, type: 'duration', default: 1000, range: [1, 3600000], group: 'Storage', description: 'how often the leader worker ends the streams due' },
  sweep: { flag: false, type: 'boolean', default: true, group: 'Storage', description: 'whether the leader worker ends streams at all' },
  counterMetric: { flag: false, type: 'string', group: 'Storage', description: 'metric of the packet counter (default: <collector name>.packets)' }
})

module.exports = { MONGO_SETTINGS, NEW_KEY_SETTINGS, COUNTER_SETTINGS, COUNTERS_INTERVAL, STREAM_SETTINGS }
