'use strict'

const launcher = require('../launcher')
const { readStats } = require('../stats-file')
const { commandConfig, launcherOptions, defaultStatsDir, formatTable, formatUptime } = require('./common')
const { printableJson } = require('../terminal-text')

const Config = commandConfig('collector ls [--json]', {
  json: { type: 'boolean', default: false, description: 'print JSON' }
})

const COLUMNS = [
  { key: 'name', title: 'NAME', align: 'left' },
  { key: 'status', title: 'STATUS', align: 'left' },
  { key: 'pid', title: 'PID' },
  { key: 'uptime', title: 'UPTIME' },
  { key: 'restarts', title: 'RESTARTS' },
  { key: 'workers', title: 'WORKERS' },
  { key: 'received', title: 'RECEIVED/S' },
  { key: 'processed', title: 'PROCESSED/S' },
  { key: 'dropped', title: 'DROPPED' },
  { key: 'collector', title: 'COLLECTOR', align: 'left' }
]

/** `collector ls`: the collectors PM2 runs, with rates from their stats files. */
async function run (argv) {
  const config = Config.parse(argv)
  if (config.help) return Config.printHelp()
  const procs = await launcher.list(launcherOptions())
  const rows = await Promise.all(procs.map(withStats))
  if (config.json) process.stdout.write(printableJson(rows, 2) + '\n')
  else if (rows.length === 0) process.stdout.write('no collectors (start one with `collector start <collector>`; collectors of a PM2 daemon since lost come back with `pm2 resurrect`, if `pm2 save` was run, see docs/operations.md)\n')
  else process.stdout.write(formatTable(COLUMNS, rows.map(toRow)))
  return 0
}

async function withStats (proc) {
  const snapshot = await readStats(proc.name, proc.statsDir || defaultStatsDir())
  const fresh = snapshot && proc.status === 'online' && snapshot.pid === proc.pid
  return { ...proc, stats: fresh ? snapshot : null }
}

function toRow (proc) {
  const s = proc.stats
  return {
    name: proc.name,
    status: proc.status,
    pid: proc.pid || null,
    uptime: formatUptime(proc.uptime),
    restarts: proc.restarts,
    workers: s ? s.stats.workers.length : null,
    received: s ? s.rates.received : null,
    processed: s ? s.rates.processed : null,
    dropped: s ? s.stats.dropped.total : null,
    // Another install's entry (an upgrade into a new directory): said.
    collector: proc.install ? `${proc.collector} (install ${proc.install})` : proc.collector
  }
}

module.exports = { run }
