'use strict'

const LoadBalancerConfig = require('../../configs/load-balancer-config')
const { settingsFlags } = require('../../configs/load-balancer-flags')
const { hasPassword } = require('../mongo/redact-uri')
const { MONGO_COLLECTOR_SETTINGS } = require('./database-settings')

const MONGO_FLAGS = settingsFlags(MONGO_COLLECTOR_SETTINGS)

/**
 * Flags shared by the collectors that store into MongoDB, from their one
 * declaration (lib/collector/database-settings.js, workers/mongo-settings.js). The
 * connection string comes from MONGODB_URI; `--mongo-uri` exists for
 * password-less URIs only, since flags are visible to everyone in `ps`.
 * A collector's config adds its own: `static flags = MongoCollectorConfig.extendFlags(settingsFlags(MY_SETTINGS))`.
 */
class MongoCollectorConfig extends LoadBalancerConfig {
  static flags = LoadBalancerConfig.extendFlags({
    ...MONGO_FLAGS,
    mongoUri: {
      ...MONGO_FLAGS.mongoUri,
      validate: (uri) => hasPassword(uri) ? 'must not contain a password (it would show in ps and logs): put the URI in the MONGODB_URI environment variable instead' : undefined
    },
    // A collector that stores is what a database outage hurts: on unless --no-buffer.
    buffer: { default: true },
    // auto: chosen at start from where the database runs (lib/collector/workers-for-database.js).
    instances: { keywords: { auto: () => 'auto' }, description: 'worker processes; auto = one per CPU, half of them (at least one) when the database runs on this host (the embedded server, or loopback or unix-socket hosts)' }
  })

  /** The flags of a collector's settings declaration (see configs/load-balancer-flags.js). */
  static settingsFlags (settings) {
    return settingsFlags(settings)
  }
}

module.exports = MongoCollectorConfig
