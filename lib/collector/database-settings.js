'use strict'

const { declareSettings } = require('../shared/settings')
const { MONGO_SETTINGS } = require('../../workers/mongo-settings')

/**
 * The embedded database a MongoCollector starts when no MongoDB is
 * configured; `collector db run` takes the same settings.
 */
const DATABASE_SETTINGS = declareSettings({
  dbPath: { type: 'path', env: 'COLLECTOR_DB_PATH', group: 'Storage', description: 'where the embedded database keeps its data (default ~/.collector-cluster/db)' },
  dbMemory: { type: 'boolean', default: false, env: 'COLLECTOR_DB_MEMORY', group: 'Storage', description: 'embedded database in memory: nothing is kept when it stops, and the Java server holds what fits in its heap, then refuses writes in one message (docs/storage.md)' },
  mongoPort: { flag: false, type: 'port', group: 'Storage', description: 'port of a local MongoDB, and of the embedded database started when none answers there (default 27017; a free one if taken)' }
})

/**
 * A collector's settings, declared once: `defaults`, LoadBalancer options
 * with this collector's values (name, port, protocol, distribution,
 * framing, worker); `master`, options the collector itself takes; `worker`,
 * what its workers take (those with a flag are collector options forwarded
 * to them too). MongoCollector's, which a collector built on it extends.
 */
const MONGO_COLLECTOR_SETTINGS = Object.freeze({
  defaults: Object.freeze({}),
  master: DATABASE_SETTINGS,
  worker: MONGO_SETTINGS
})

module.exports = { DATABASE_SETTINGS, MONGO_COLLECTOR_SETTINGS }
