'use strict'

const launcher = require('../launcher')
const { defaultDbPath, serverDataPath, serverName } = require('../../lib/mongo/embedded-server')
const { pingMongo } = require('../../lib/mongo/resolve-mongo')
const { findServerStartedBy } = require('../../lib/mongo/started-servers')
const { takePositionals, launcherOptions, usageError } = require('./common')

// Flags are run's and start's: stop and status act on the one database under PM2, at the address it was started with.
const USAGE = 'collector db run|start [--port 27017] [--host 127.0.0.1] [--db-path DIR] [--db-memory] | collector db stop|status'
const ONE_DATABASE = 'takes no options: it acts on the one database `collector db start` runs under PM2, at the port and path it was started with'

/**
 * `collector db run`: the embedded database in the foreground (what `npm run
 * db` runs). `start`: under PM2, shared by every collector started with
 * `collector start` (they find it on 127.0.0.1:27017), stopped by none of
 * them. `stop`, `status`. Either server, a real mongod or the Java one
 * (lib/mongo/choose-server.js), is run, kept and described the same way.
 */
async function run (argv) {
  if (argv[0] === '--help' || argv[0] === '-h') {
    process.stdout.write(`usage: ${USAGE}\n\n`)
    return require('../database-entry').Config.printHelp()
  }
  const { values: [action], rest } = takePositionals(argv, ['run|start|stop|status'], USAGE)
  switch (action) {
    case 'run': return require('../database-entry').main(rest)
    case 'start': return start(rest)
    case 'stop': return stop(rest)
    case 'status': return status(rest)
    default: throw usageError(`unknown action ${JSON.stringify(action)}\nusage: ${USAGE}`)
  }
}

// `db stop --help`, `db status --help`: their usage, exit 0 (as every other command's --help), not a mistake.
function asksHelp (argv, action) {
  if (argv.length !== 1 || (argv[0] !== '--help' && argv[0] !== '-h')) return false
  process.stdout.write(`usage: collector db ${action}\n\n${action === 'stop' ? 'Stops' : 'Describes'} the one database \`collector db start\` runs under PM2, at the port and path it was started with; no options.\n`)
  return true
}

async function start (argv) {
  const { Config, logger } = require('../database-entry')
  // A bad flag fails here, not in a PM2 log; the help names `db start`, with run's flags.
  if (Config.parse(argv).help) return (class extends Config { static usage = Config.usage.replace('db run', 'db start') }).printHelp()
  const proc = await launcher.startDatabase(argv, { ...launcherOptions(), logger })
  const { choice } = proc
  const config = Config.parse(proc.args, {})
  const skipped = choice.skipped.length ? `; skipped: ${choice.skipped.join(', ')}` : ''
  const again = proc.again && proc.args.length > 0 ? ` again with its flags (${proc.args.join(' ')})` : ''
  process.stdout.write(`started the database under PM2${again} (pid ${proc.pid}): ${serverName(choice)}, ${describeStorage(config, choice.kind)}${choice.source ? ` (${choice.source})` : ''}${skipped}; see \`collector db status\`\n`)
  if (proc.answers) return 0
  process.stderr.write(`collector: the database does not answer at mongodb://${config.host}:${config.port} yet; \`collector db status\` says when it does, its log why not (${proc.errLog})\n`)
  return 1
}

async function stop (argv) {
  if (asksHelp(argv, 'stop')) return 0
  if (argv.length) throw usageError(`unexpected argument(s): ${argv.join(' ')}; collector db stop ${ONE_DATABASE}\nusage: collector db stop`)
  const { inMemory } = await launcher.stopDatabase(launcherOptions())
  process.stdout.write(inMemory ? 'stopped the database (it was in memory: its data is gone)\n' : 'stopped the database (its data is kept)\n')
  return 0
}

async function status (argv) {
  if (asksHelp(argv, 'status')) return 0
  if (argv.length) throw usageError(`unexpected argument(s): ${argv.join(' ')}; collector db status ${ONE_DATABASE}\nusage: collector db status`)
  const proc = await launcher.describeDatabase(launcherOptions())
  if (!proc) {
    process.stdout.write('the database is not running under PM2 (start it with `collector db start`)\n')
    return 1
  }
  const config = require('../database-entry').Config.parse(proc.args, {})
  const uri = `mongodb://${config.host}:${config.port}`
  const answers = proc.status === 'online' && await pingMongo(uri)
  // what runs, from the record its starter (the PM2 app) keeps of it
  const server = proc.pid ? findServerStartedBy(proc.pid) : null
  process.stdout.write([
    `collector-db  ${proc.status}  pid ${proc.pid || '-'}  ${uri}  ${answers ? 'answers ping' : 'does not answer'}`,
    ...(server ? [`server  ${serverName(server)}, pid ${server.pid}`] : []),
    `data  ${describeStorage(config, server && server.kind)}`,
    `logs  ${proc.logs.out}`,
    ...(proc.status === 'online' ? [] : ['(`collector db start` starts it again with the flags it had)']),
    ''
  ].join('\n'))
  return answers ? 0 : 1
}

// Where the data lives: a mongod's in its folder of the data directory,
// the Java server's in the directory itself; unknown kind: the directory.
function describeStorage (config, kind) {
  if (config.dbMemory) return 'in memory (gone when it stops)'
  const dir = config.dbPath || defaultDbPath()
  return `on disk in ${kind ? serverDataPath(kind, dir) : dir}`
}

module.exports = { run, USAGE }
