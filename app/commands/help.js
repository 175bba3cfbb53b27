'use strict'

const { builtIns } = require('../collector-registry')

const LINES = [
  ['run <collector> [flags]', 'run a collector in the foreground (Ctrl-C drains and exits)'],
  ['start <collector> [flags]', 'start a collector under PM2 (returns once it is ready)'],
  ['start <name>', 'start a stopped collector again, with the flags it was started with'],
  ['stop <name>', 'stop a collector; it drains its workers first'],
  ['restart <name>', 'rolling restart of its workers, one at a time, nothing lost'],
  ['delete <name>', 'stop a collector and remove it from PM2'],
  ['ls', 'list the collectors under PM2 (collector start): status, pid, uptime, restarts, rates (top and status show those run in the foreground too)'],
  ['status <name> [--json]', 'counters of one collector, its disk buffer and dead letters'],
  ['replay <name> [file...]', 'queue its dead letters (batches given up) to be delivered again at its next start or restart'],
  ['logs <name> [--lines N] [--follow]', 'its log (PM2\'s files), readable; --json as written'],
  ['top [--once] [--interval 1s]', 'live per-collector, per-worker rates, drops and DB writes'],
  ['calls [NAME] [--call-id ID] [--number N] [--outcome O] [--worst 10] [--since 1h] [--json] [--serve PORT]', 'find a call (SIP calls, failed ones too, and RTCP streams): one by Call-ID with its SIP ladder, by number or outcome; the worst by their verdict with loss, jitter, RTT; calls by band (--per-minute); an HTML view'],
  ['db run|start [--port N] [--db-path DIR] [--db-memory] | db stop|status', 'the embedded database: foreground, or under PM2 shared by collectors'],
  ['simulate rtcp|syslog --target host:port', 'send test traffic (see collector simulate --help)'],
  ['verify <collector> --sample FILE [--json]', 'check that a collector stores each sample record exactly once, workers and master killed (CI)'],
  ['demo [--streams N] [--rate R] [--duration 10s]', 'RTCP collector + embedded database + simulated calls (npm start)'],
  ['help', 'this text (also: <command> --help; --version, the version)']
]

/** The CLI's usage text. */
function text () {
  const width = Math.max(...LINES.map(([left]) => left.length))
  const collectors = builtIns().map((c) => (c.available ? c.name : `${c.name} (not installed)`)).join(', ')
  return [
    'Usage: collector <command> [arguments]',
    '',
    'Commands:',
    ...LINES.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`),
    '',
    `<collector> is a built-in collector (${collectors}) or the path of a`,
    'collector module. `collector run <collector> --help` lists its flags.',
    'PM2_HOME selects the PM2 instance; COLLECTOR_STATS_DIR where counters are kept.',
    ''
  ].join('\n')
}

/** `collector help`: prints usage, exit 0. */
async function run () {
  process.stdout.write(text())
  return 0
}

module.exports = { run, text }
