'use strict'

const fs = require('node:fs')
const path = require('node:path')
const { commandConfig, takePositionals, usageError } = require('./common')
const { BUILT_INS, resolveCollector } = require('../collector-registry')

const USAGE = 'collector verify <collector> [--sample FILE ...] [--duration 10s] [--kills 4] [--json] [-- collector flags]'
const Config = commandConfig(USAGE, {
  sample: { type: 'list', description: 'sample messages: a text file (one message a line) or a pcap file of UDP datagrams; repeat for more (default for a built-in collector: the files in its samples/ folder)' },
  duration: { type: 'duration', min: 1000, default: '10s', description: 'how long sending the samples takes at most, over the three runs (slower with --rate)' },
  rate: { type: 'number', min: 1, default: 5000, description: 'messages a second at most' },
  kills: { type: 'integer', min: 0, max: 1000, default: 4, description: 'worker SIGKILLs at least (one every 0.5 s while sending, more after if owed)' },
  masterKill: { type: 'boolean', default: true, description: 'SIGKILL the master once with messages it holds, and replay them (--no-master-kill: one run)' },
  instances: { type: 'integer', min: 1, max: 16, default: 2, description: 'the collector\'s workers' },
  udpPort: { type: 'port', description: 'take only the pcap\'s datagrams to this UDP port' },
  json: { type: 'boolean', default: false, description: 'print the report as JSON' },
  keep: { type: 'boolean', default: false, description: 'keep the work directory (the collector\'s logs and disk buffer) even when exact, and with MONGODB_URI the database' },
  quiet: { type: 'boolean', default: false, description: 'no progress lines on stderr' }
})

/**
 * `collector verify <collector> --sample FILE`: runs a collector definition
 * on a private database with its workers and its master killed, sends the
 * samples, and checks that each record was stored exactly once in each
 * sink, and each refusal counted by its reason, against the definition run
 * in this process (app/verify/). Exit 0: exactly once; 1: a mismatch, or
 * not every sample could be checked; 2: bad usage. Flags after `--` are the
 * collector's own (`-- --prefix prod.`).
 */
async function run (argv) {
  if (argv[0] === '--help' || argv[0] === '-h') return Config.printHelp()
  const split = argv.indexOf('--')
  const own = split === -1 ? argv : argv.slice(0, split)
  const { values: [collector], rest } = takePositionals(own, ['collector'], USAGE)
  const config = Config.parse(rest)
  if (config.help) return Config.printHelp()
  resolveCollector(collector) // an unknown collector is said first (ERR_UNKNOWN_COLLECTOR), before what it would need
  const samples = config.sample && config.sample.length ? config.sample : builtInSamples(collector)
  const quiet = config.quiet || config.json
  const { verifyCollector } = require('../verify/verify-collector')
  // Exiting takes the collector's runs down with verify (app/verify/collector-process.js).
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130))
  const report = await verifyCollector({
    collector,
    samples,
    flags: split === -1 ? [] : argv.slice(split + 1),
    instances: config.instances,
    rate: config.rate,
    duration: config.duration,
    kills: config.kills,
    masterKill: config.masterKill,
    udpPort: config.udpPort,
    keep: config.keep,
    progress: (text) => { if (!quiet) process.stderr.write(`verify: ${text}\n`) }
  })
  process.stdout.write(config.json ? JSON.stringify(report) + '\n' : require('../verify/report').formatReport(report))
  return report.verdict === 'exactly once' ? 0 : 1
}

// A built-in collector's own samples (collectors/<name>/samples/), when no --sample is given.
function builtInSamples (collector) {
  const dir = Object.hasOwn(BUILT_INS, collector) ? path.join(path.dirname(BUILT_INS[collector]), 'samples') : null
  const files = dir && fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => !f.endsWith('.md') && !f.endsWith('.js')).sort().map((f) => path.join(dir, f)) : []
  if (files.length === 0) throw usageError(`--sample is required: a file of sample messages for ${collector}\nusage: ${USAGE}`)
  return files
}

module.exports = { run, USAGE }
