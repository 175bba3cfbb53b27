'use strict'

// `collector verify`: a collector definition held to its contract
// (docs/writing-collectors.md, "Records, state and refusals") on the
// author's own sample messages. The expectation comes from the definition
// run in this process (expectation.js); the result from the collector run
// for real, workers and master killed (exercise.js), on a private database
// (database.js); compare.js and report.js say whether each record was
// stored exactly once.

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const CollectorError = require('../../exceptions/collector-error')
const { resolveCollector } = require('../collector-registry')
const { forwardedKeys, resolveSettings } = require('../../lib/shared/settings')
const { readSamples } = require('./samples')
const { createSender, SPREAD } = require('./sender')
const { privateDatabase } = require('./database')
const { exercise } = require('./exercise')
const { expectation } = require('./expectation')
const { compareStored } = require('./compare')
const { buildReport } = require('./report')

/**
 * @param {{ collector: string, samples: string[], flags: string[], instances: number, rate: number, duration: number,
 *   kills: number, masterKill: boolean, udpPort?: number, keep: boolean, progress(text: string): void }} options
 *   duration: how long the samples take to send at most (ms); rate: at most this many a second
 * @returns {Promise<object>} the report (report.js buildReport)
 */
async function verifyCollector (options) {
  const started = Date.now()
  const loaded = loadDefinition(options.collector)
  const config = new loaded.module.Config(['--port', '0', ...options.flags]).getConfig()
  const settings = workerSettings(loaded.module.Collector.settings.worker, config, options.instances)
  const samples = readSamples(options.samples, { udpPort: options.udpPort })
  const sender = createSender(config)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collector-verify-'))
  const name = `verify-${loaded.definition.name}-${process.pid}`
  const rate = Math.min(options.rate, Math.max(1, samples.messages.length / (options.duration / 1000)))
  let report = null
  let database = null
  try {
    options.progress(`${samples.messages.length} sample messages at ${Math.round(rate)}/s; starting the database`)
    database = await privateDatabase({ name: loaded.definition.name, keep: options.keep })
    const dbReady = Date.now()
    const run = await exercise({ ...options, target: loaded.target, name, messages: samples.messages, sender, database, dir, rate })
    const sent = run.sent.map((from, i) => ({ data: samples.messages[i], ...from }))
    const expected = expectation(loaded.definition, settings, sent, SPREAD, name)
    const stored = await compareStored(database.db, expected, { keptCollection: keptCollection(loaded.definition) })
    run.summary = { instances: options.instances, rate: Math.round(rate) }
    const timings = { totalMs: Date.now() - started, databaseMs: dbReady - started, runMs: Date.now() - dbReady }
    report = buildReport({ collector: options.collector, samples: { messages: samples.messages.length, files: samples.files }, run, expected, stored, where: database.where, timings })
    return report
  } finally {
    sender.close()
    if (database) await database.close(options.keep)
    if (report && report.verdict === 'exactly once' && !options.keep) {
      fs.rmSync(dir, { recursive: true, force: true })
      report.logs = []
    } else if (report) {
      report.workDir = dir
    }
  }
}

// The collector module and its definition: verify checks what defineCollector built.
function loadDefinition (target) {
  const where = resolveCollector(target)
  let module
  try {
    module = require(where.modulePath)
  } catch (err) {
    throw new CollectorError(`collector ${target} failed to load: ${err.message}`, 'ERR_INVALID_COLLECTOR', { target, cause: err })
  }
  if (!module || !module.definition || typeof module.definition.decode !== 'function') {
    throw new CollectorError(`collector verify checks a collector made with defineCollector; ${target} exports no definition`, 'ERR_USAGE')
  }
  return { target: where.builtIn ? target : where.modulePath, module, definition: module.definition }
}

// The settings its workers get (lib/collector/mongo-collector.js forwards the
// flagged ones; newKeyShares is the collector's instances).
function workerSettings (declared, config, instances) {
  const given = {}
  for (const key of forwardedKeys(declared)) if (config[key] !== undefined) given[key] = config[key]
  if (declared.newKeyShares) given.newKeyShares = instances
  return resolveSettings(declared, given)
}

function keptCollection (definition) {
  return definition.keep ? definition.keep.collection || `${definition.name}_kept` : null
}

module.exports = { verifyCollector }
