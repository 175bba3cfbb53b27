#!/usr/bin/env node
'use strict'

// The embedded database as a process of its own: `collector db run` in the
// foreground, `collector db start` under PM2 (this file is the PM2 script),
// `npm run db`. It owns its signal handlers: SIGINT/SIGTERM stop the server
// (which commits its data first) and exit 0.

const { startEmbeddedServer, defaultDbPath } = require('../lib/mongo/embedded-server')
const { relayNpmShellSignals } = require('./npm-shell-signals')
const { commandConfig } = require('./commands/common')
const { flagOf } = require('../configs/load-balancer-flags')
const { DATABASE_SETTINGS } = require('../lib/collector/database-settings')
const EXIT = require('./exit-codes')

const USAGE = 'collector db run [--port 27017] [--host 127.0.0.1] [--db-path DIR] [--db-memory]'
const Config = commandConfig(USAGE, {
  port: { alias: 'p', type: 'port', default: 27017, env: 'COLLECTOR_DB_PORT', description: 'port to listen on (0 = ephemeral)' },
  host: { type: 'string', default: '127.0.0.1', description: 'address to listen on' },
  // The collectors' own (lib/collector/database-settings.js): one --db-path for both.
  dbPath: flagOf(DATABASE_SETTINGS.dbPath),
  dbMemory: flagOf(DATABASE_SETTINGS.dbMemory)
})

// Plain lines for people: the server's own log says what it started.
const logger = {
  info: (obj, msg) => console.error(msg || obj),
  warn: (obj, msg) => console.error(`warning: ${msg || obj}`),
  error: (obj, msg) => console.error(`error: ${msg || obj}`),
  debug () {},
  trace () {},
  fatal: (obj, msg) => console.error(`fatal: ${msg || obj}`),
  child () { return logger }
}

/**
 * Runs the server until a signal; resolves with the exit code.
 * @param {string[]} argv the flags
 * @returns {Promise<number>}
 */
async function main (argv) {
  const config = Config.parse(argv)
  if (config.help) return Config.printHelp()
  const dbPath = config.dbMemory ? undefined : (config.dbPath || defaultDbPath())
  let server
  try {
    server = await startEmbeddedServer({ host: config.host, port: config.port, logger, dbPath })
  } catch (err) {
    console.error(`collector db: ${err.message}`)
    return EXIT.startFailedCode(process.env) // a restart by PM2 is retried (app/exit-codes.js)
  }
  console.log(server.uri)
  console.error(`MONGODB_URI=${server.uri} — Ctrl-C to stop`)
  if (typeof process.send === 'function' && process.connected) process.send('ready')
  let stopping = false
  let relay
  const stopped = new Promise((resolve) => {
    const shutdown = (signal) => {
      if (stopping) return
      stopping = true
      relay.stop()
      console.error(`${signal}: stopping the ${server.kind} server`)
      server.stop().then(() => resolve(EXIT.OK))
    }
    process.once('SIGINT', shutdown)
    process.once('SIGTERM', shutdown)
    relay = relayNpmShellSignals() // `npm run db`: a signal sent to npm alone (app/npm-shell-signals.js)
  })
  const exited = server.exited.then(({ code, signal }) => {
    if (stopping) return stopped
    console.error(`the ${server.kind} server exited on its own (${signal || `exit code ${code}`})`)
    return EXIT.FAILED
  })
  return Promise.race([stopped, exited])
}

if (require.main === module || process.env.pm_exec_path === __filename) {
  main(process.argv.slice(2)).then((code) => process.exit(code), (err) => {
    console.error(`collector db: ${err.message}`)
    process.exit(err.code === 'ERR_INVALID_CONFIG' ? EXIT.BAD_USAGE : EXIT.FAILED)
  })
}

module.exports = { main, USAGE, Config, logger }
