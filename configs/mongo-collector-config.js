'use strict'

const LoadBalancerConfig = require('./load-balancer-config')
const { hasPassword } = require('../lib/mongo/redact-uri')

/**
 * Flags shared by the collectors that store into MongoDB. The connection
 * string comes from MONGODB_URI; `--mongo-uri` exists for password-less
 * URIs only, since flags are visible to everyone in `ps`.
 */
class MongoCollectorConfig extends LoadBalancerConfig {
  static flags = LoadBalancerConfig.extendFlags({
    mongoUri: {
      type: 'string',
      secret: true,
      // Where `collector start` moves it: flags of a PM2 process show in ps.
      env: 'COLLECTOR_MONGO_URI',
      group: 'Storage',
      description: 'MongoDB URI without a password (else MONGODB_URI; else a local or embedded server)',
      validate: (uri) => hasPassword(uri) ? 'must not contain a password (it would show in ps and logs): put the URI in the MONGODB_URI environment variable instead' : undefined
    },
    // No default: a flag given must be told apart from none, when the URI's
    // database wins (resolved in collectors/mongo-collector.js).
    database: { type: 'string', group: 'Storage', description: 'database name (default: the one the URI names, else collector)' },
    dbPath: { type: 'path', env: 'COLLECTOR_DB_PATH', group: 'Storage', description: 'where the embedded database keeps its data (default ~/.collector-cluster/db); used when no MongoDB is configured' },
    dbMemory: { type: 'boolean', default: false, env: 'COLLECTOR_DB_MEMORY', group: 'Storage', description: 'embedded database in memory: nothing is kept when it stops' },
    flushInterval: { type: 'duration', default: 250, group: 'Storage', description: 'how long updates are coalesced before one bulk write' },
    maxPending: { type: 'integer', min: 1, default: 100000, group: 'Storage', description: 'pending updates kept per worker while the database is away; more are dropped and counted' },
    // A collector that stores is what a database outage hurts: on unless --no-buffer.
    buffer: { default: true }
  })
}

/** Worker options a MongoDB-backed collector forwards from its config. */
MongoCollectorConfig.WORKER_KEYS = ['mongoUri', 'database', 'flushInterval', 'maxPending']

module.exports = MongoCollectorConfig
