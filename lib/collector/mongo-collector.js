'use strict'

const LoadBalancer = require('../master/load-balancer')
const { OPTIONS } = require('../master/options')
const { MONGO_COLLECTOR_SETTINGS } = require('./database-settings')
const { forwardedKeys, checkSettings } = require('../shared/settings')
const { resolveMongo, resolveDatabase, uriDatabase } = require('../mongo/resolve-mongo')
const { uriHosts } = require('../mongo/redact-uri')
const { defaultDbPath } = require('../mongo/embedded-server')
const { workersForDatabase } = require('./workers-for-database')

/**
 * A LoadBalancer whose workers write to MongoDB. Before the workers start
 * it settles which database to use (an explicit password-less URI,
 * MONGODB_URI, a server on the default local port, or an embedded server it
 * starts and owns) and hands the URI to the workers through their
 * environment, never their command line. The database is `--database` when
 * given, else the one the URI names, else `collector`. The embedded server
 * is stopped last, after the workers have drained.
 */
class MongoCollector extends LoadBalancer {
  /**
   * The settings declared once for this collector (lib/collector/database-settings.js):
   * `defaults` (its LoadBalancer defaults), `master` (options it takes
   * itself), `worker` (what its workers take). A collector built on it
   * declares its own: `static settings = MY_SETTINGS`.
   */
  static settings = MONGO_COLLECTOR_SETTINGS

  /**
   * Options forwarded to the workers: the worker settings that have a flag
   * (a subclass adds its own: `static workerOptionKeys = [...super.workerOptionKeys, 'x']`).
   */
  static get workerOptionKeys () {
    return forwardedKeys(this.settings.worker)
  }

  /**
   * Accepted beside LoadBalancer's: the worker options, and for an embedded
   * server `mongoPort` (where it listens), `dbPath` (where its data lives;
   * default $COLLECTOR_DB_PATH, else ~/.collector-cluster/db) and
   * `dbMemory` (keep nothing: the memory backend).
   */
  static get optionKeys () {
    return [...super.optionKeys, ...Object.keys(this.settings.master), ...this.workerOptionKeys]
  }

  /**
   * @param {object} options LoadBalancer options (or a parsed config) over
   *   the collector's `settings.defaults`; the keys named by `workerKeys`
   *   are forwarded to the workers; the declared settings are checked here
   *   (InvalidOptionError), as the config checks its flags
   * @param {string[]} [workerKeys] default: the class's `workerOptionKeys`
   */
  constructor (options = {}, workerKeys = new.target.workerOptionKeys) {
    const { settings } = new.target
    const workerOptions = { ...options.workerOptions }
    for (const key of workerKeys) if (options[key] !== undefined) workerOptions[key] = options[key]
    checkSettings(settings.master, options)
    checkSettings(settings.worker, workerOptions)
    const instances = options.instances ?? settings.defaults.instances
    super({ ...settings.defaults, ...options, maxInFlight: inFlightBound(options, workerOptions, settings), workerOptions })
    this.dbServer = null
    // Not told how many workers: chosen at start from where the database runs (workers-for-database.js).
    this.workersAuto = instances === undefined || instances === 'auto'
  }

  async doStart () {
    const { dbMemory, dbPath, mongoPort: port } = this.options
    const { uri, server } = await resolveMongo({ uri: this.options.workerOptions.mongoUri, logger: this.logger, port, dbPath: dbMemory ? undefined : (dbPath || defaultDbPath()) })
    this.dbServer = server
    const workerOptions = this.options.workerOptions
    workerOptions.mongoUri = uri
    workerOptions.database = resolveDatabase(workerOptions.database, uri)
    const database = workerOptions.database || uriDatabase(uri)
    this.logger.info({ database }, `writing to database ${database}`)
    if (this.workersAuto) this.chooseWorkers(workersForDatabase(uri, server !== null))
    try {
      await super.doStart()
    } catch (err) {
      await this.stopDatabase()
      throw err
    }
  }

  // The number of workers, before any is forked (a definition's workers
  // share its new-key limit among them).
  chooseWorkers (instances) {
    this.options.instances = instances
    if (this.options.workerOptions.newKeyShares !== undefined) this.options.workerOptions.newKeyShares = instances
  }

  /**
   * The database the workers write to, as the disk buffer and the dead
   * letters record it (never a password): `<hosts>/<database>`, or, for
   * the embedded server this collector started (whose port may change
   * from run to run), `embedded <data directory>/<database>`.
   */
  destination () {
    const { mongoUri, database } = this.options.workerOptions
    const name = database || uriDatabase(mongoUri)
    if (this.dbServer) return `embedded ${this.options.dbMemory ? '(memory)' : (this.options.dbPath || defaultDbPath())}/${name}`
    return `${uriHosts(mongoUri)}/${name}`
  }

  async doStop () {
    await super.doStop()
    await this.stopDatabase()
  }

  async stopDatabase () {
    const server = this.dbServer
    this.dbServer = null
    if (server) await server.stop()
  }
}

/**
 * The master's in-flight bound per worker is at most what a worker holds
 * pending (`maxPending`): one bound, declared by the worker setting. Past
 * it a worker refuses (dropped.workerFull) where the master would have
 * waited or, with the disk buffer, kept the message on disk.
 */
function inFlightBound (options, workerOptions, settings) {
  const maxPending = workerOptions.maxPending ?? settings.worker.maxPending.default
  const maxInFlight = options.maxInFlight ?? OPTIONS.maxInFlight.default
  return Math.min(maxInFlight, maxPending)
}

module.exports = MongoCollector
