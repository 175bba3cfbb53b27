#!/usr/bin/env node
'use strict'

// `npm run db`: a standalone MongoDB-compatible server for development.
// An entry point, so it prints and owns its signal handlers.

const minimist = require('minimist')
const { startEmbeddedServer } = require('../lib/mongo/embedded-server')

const USAGE = `usage: npm run db -- [--port 27017] [--host 127.0.0.1]

Starts a local MongoDB-compatible server (mongod from PATH, else the Java
server in java/) and runs it until Ctrl-C. Point the collectors at it with
MONGODB_URI=<printed uri>.`

function parseArgs (argv) {
  const args = minimist(argv, {
    string: ['host', 'port'],
    boolean: ['help'],
    alias: { p: 'port', h: 'help' },
    default: { host: '127.0.0.1', port: '27017' }
  })
  const port = Number(args.port)
  if (!/^\d+$/.test(args.port) || port > 65535) throw new Error(`--port must be an integer from 0 to 65535, got ${JSON.stringify(args.port)}`)
  return { host: args.host, port, help: args.help }
}

const logger = {
  info: (obj, msg) => console.error(msg || obj),
  warn: (obj, msg) => console.error(`warning: ${msg || obj}`),
  error: (obj, msg) => console.error(`error: ${msg || obj}`),
  debug () {},
  trace () {},
  fatal: (obj, msg) => console.error(`fatal: ${msg || obj}`),
  child () { return logger }
}

async function main () {
  const options = parseArgs(process.argv.slice(2))
  if (options.help) return console.log(USAGE)
  const server = await startEmbeddedServer({ host: options.host, port: options.port, logger })
  console.log(server.uri)
  console.error(`MONGODB_URI=${server.uri} — Ctrl-C to stop`)
  let stopping = false
  const shutdown = (signal) => {
    stopping = true
    console.error(`${signal}: stopping the ${server.kind} server`)
    server.stop().then(() => process.exit(0))
  }
  process.once('SIGINT', shutdown)
  process.once('SIGTERM', shutdown)
  const { code, signal } = await server.exited
  if (stopping) return
  console.error(`the ${server.kind} server exited on its own (${signal || `exit code ${code}`})`)
  process.exit(1)
}

main().catch((err) => {
  console.error(`npm run db: ${err.message}`)
  process.exit(1)
})
