'use strict'

// The shared embedded database as a PM2 app (`collector db start|stop|status`).

const path = require('node:path')
const CollectorError = require('../exceptions/collector-error')
const { APP_DEFAULTS, withPm2, call, findApp, removeApp, errorLogMark, startFailure } = require('./pm2-api')
const { chooseEmbeddedServer } = require('../lib/mongo/choose-server')
const { ensureJavaServerBuilt } = require('../lib/mongo/java-build')
const { startWaiterEnv } = require('./exit-codes')
const { startTimeoutFor } = require('../lib/mongo/java-server')
const { serverDataPath, defaultDbPath } = require('../lib/mongo/embedded-server')
const { pingMongo } = require('../lib/mongo/resolve-mongo')

/** The PM2 app of the shared embedded database (`collector db start`). */
const DB_APP = 'collector-db'
const DB_ENTRY = path.join(__dirname, 'database-entry.js')

/**
 * Starts the embedded database under PM2 (`collector db start`), so that the
 * collectors started with `collector start` share one server that none of
 * them stops. Resolves once it listens; rejects with its own one-line reason
 * (and leaves no PM2 app behind) when it cannot start.
 * @param {string[]} argv its flags (app/database-entry.js: --port, --host, --db-path, --db-memory); none, of one stopped: the flags it had
 * @param {{ pm2Home?: string, env?: object, logger?: object }} [options] logger: the choice's progress (a fetch, a build)
 * @returns {Promise<{ name: string, pid: number, status: string, args: string[], choice: import('../lib/mongo/choose-server').ServerChoice }>}
 */
async function startDatabase (argv = [], options = {}) {
  const env = { ...process.env, ...options.env }
  // The server is chosen here, in the foreground (a mongod fetched, the
  // Java server built, their progress on the terminal), so that PM2 waits
  // for a server that only has to start; the app keeps to that choice.
  const choice = await chooseEmbeddedServer({ env, logger: options.logger })
  if (choice.kind === 'java') await ensureJavaServerBuilt({ env, logger: options.logger })
  const keep = choice.kind === 'mongod' ? { COLLECTOR_DB_SERVER: 'mongod', MONGOMS_SYSTEM_BINARY: choice.binary } : { COLLECTOR_DB_SERVER: 'java' }
  return withPm2(options, async (api) => {
    const existing = await findApp(api, DB_APP)
    if (existing && existing.pm2_env.status === 'online') throw new CollectorError(`the database is already running under PM2 (pid ${existing.pid}); see \`collector db status\``, 'ERR_DB_RUNNING')
    // Stopped, it is started again where it was (`db stop` keeps the app
    // for that): its data in the --db-path it was given, on its port.
    const args = existing && argv.length === 0 ? [].concat(existing.pm2_env.args || []) : argv
    const config = require('./database-entry').Config.parse(args, {})
    if (existing) await call(api, 'delete', DB_APP)
    const app = {
      ...APP_DEFAULTS,
      name: DB_APP,
      script: DB_ENTRY,
      args,
      listen_timeout: listenTimeoutOf(config, choice),
      kill_timeout: 15000,
      env: { ...options.env, ...keep, ...startWaiterEnv() }
    }
    const mark = errorLogMark(options, DB_APP)
    await call(api, 'start', app)
    const proc = await findApp(api, DB_APP)
    if (!proc || proc.pm2_env.status !== 'online') {
      const reason = (proc && startFailure(proc.pm2_env.pm_err_log_path, mark)) || `status ${proc ? proc.pm2_env.status : 'missing'}`
      await removeApp(api, DB_APP)
      throw new CollectorError(reason.replace(/^collector db: /, ''), 'ERR_DB_START')
    }
    // PM2 takes an app as started once listen_timeout has passed too: the server is asked.
    const answers = await answersWithin(`mongodb://${config.host}:${config.port}`, ANSWER_WAIT_MS)
    return { name: DB_APP, pid: proc.pid, status: proc.pm2_env.status, args: [].concat(proc.pm2_env.args || []), choice, again: args !== argv, answers, errLog: proc.pm2_env.pm_err_log_path }
  })
}

const ANSWER_WAIT_MS = 10000
const LISTEN_MARGIN_MS = 15000

// PM2 waits for the entry's word that its server listens as long as the
// entry waits for it (longer for a large data file: startTimeoutFor), and
// a margin: past listen_timeout it would take the app as started.
function listenTimeoutOf (config, choice) {
  const dbPath = config.dbMemory ? null : serverDataPath(choice.kind, config.dbPath || defaultDbPath())
  return (choice.kind === 'java' ? startTimeoutFor(dbPath) : 60000) + LISTEN_MARGIN_MS
}

async function answersWithin (uri, ms) {
  const until = Date.now() + ms
  while (!await pingMongo(uri)) {
    if (Date.now() >= until) return false
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
  return true
}

/**
 * Stops the database PM2 runs (it commits its data), keeping its app, so
 * that `collector db start` with no flags starts it again where it was (its
 * data directory, its port): `{ inMemory }`, whether its data went with it.
 */
function stopDatabase (options = {}) {
  return withPm2(options, async (api) => {
    const proc = await findApp(api, DB_APP)
    if (!proc) throw new CollectorError('the database is not running under PM2 (start it with `collector db start`)', 'ERR_NO_SUCH_COLLECTOR')
    // Launching or errored (PM2 trying it again) is stopped too: only a stopped one is.
    if (proc.pm2_env.status === 'stopped') throw new CollectorError('the database under PM2 is already stopped (`collector db start` starts it again with the flags it had)', 'ERR_COLLECTOR_NOT_RUNNING')
    await call(api, 'stop', DB_APP)
    return { inMemory: [].concat(proc.pm2_env.args || []).includes('--db-memory') }
  })
}

/** The database PM2 runs: `{ pid, status, args, logs }`, or null. */
function describeDatabase (options = {}) {
  return withPm2(options, async (api) => {
    const proc = await findApp(api, DB_APP)
    if (!proc) return null
    const env = proc.pm2_env
    return { name: DB_APP, pid: env.status === 'online' ? proc.pid : 0, status: env.status, args: [].concat(env.args || []), uptime: env.status === 'online' ? Date.now() - env.pm_uptime : 0, logs: { out: env.pm_out_log_path, err: env.pm_err_log_path } }
  })
}

module.exports = { DB_APP, startDatabase, stopDatabase, describeDatabase }
