'use strict'

const InvalidOptionError = require('../../exceptions/invalid-option-error')
const WorkerDownError = require('../../exceptions/worker-down-error')
const { whereFailed } = require('../shared/where-failed')

/**
 * Builds the worker from a module that exports a Worker subclass, a plain
 * object with doWork(), a function `(options) => worker`, or a collector
 * module whose `Worker` is one (a definition's: lib/collector/define-collector.js). A module that
 * cannot be loaded or built (a syntax error, a throw while it loads or in its
 * constructor) fails with a WorkerDownError whose message starts with the
 * file and line at fault, also kept as `file` and `line`.
 */
function instantiateWorker (modulePath, options) {
  let exported
  try {
    exported = require(modulePath)
    if (exported && exported.default) exported = exported.default
    // A collector module (a definition's, or one with a Worker): its worker.
    if (exported && typeof exported === 'object' && typeof exported.doWork !== 'function' && typeof exported.Worker === 'function') exported = exported.Worker
    if (typeof exported === 'function' && exported.prototype && typeof exported.prototype.doWork === 'function') {
      const WorkerClass = exported
      return new WorkerClass(options)
    }
    if (typeof exported === 'function') exported = exported(options)
  } catch (err) {
    throw loadError(err, modulePath)
  }
  return adopt(exported, modulePath)
}

// The hooks the runtime calls, as Worker's base class defines them (no-ops);
// a worker that is a plain object gets those it lacks.
const DEFAULT_HOOKS = Object.freeze({
  async init () {},
  async prepareRedelivered () {},
  async flush () {},
  async close () {},
  stats () { return {} },
  onLeader () {}
})

function adopt (candidate, modulePath) {
  if (!candidate || typeof candidate.doWork !== 'function') {
    throw new InvalidOptionError('worker', modulePath, `must export a Worker subclass, an object with doWork(), or a factory returning one (${describeExport(candidate)})`)
  }
  for (const [hook, fallback] of Object.entries(DEFAULT_HOOKS)) {
    if (typeof candidate[hook] !== 'function') candidate[hook] = fallback
  }
  return candidate
}

// What the module gave instead, so that `exports.MyWorker = ...` (a named
// export where the class itself was meant) is recognisable.
function describeExport (value) {
  if (value === null || value === undefined) return `it gives ${value}`
  if (typeof value !== 'object') return `it gives a ${typeof value}`
  const keys = Object.keys(value)
  return keys.length ? `it exports an object with ${keys.slice(0, 5).join(', ')}${keys.length > 5 ? ', …' : ''} and no doWork()` : 'it exports an empty object'
}

/** `file:line: Name: first line of the message`, the location found as `whereFailed` says. */
function loadError (err, modulePath) {
  if (!(err instanceof Error)) return new WorkerDownError(`${modulePath}: threw ${String(err)}`, { file: modulePath, line: null, cause: err })
  const where = whereFailed(err, modulePath, __dirname)
  const first = String(err.message).split('\n')[0]
  const at = where ? `${where.file}:${where.line}` : modulePath
  return new WorkerDownError(`${at}: ${err.name}: ${first}`, { file: where ? where.file : modulePath, line: where ? where.line : null, cause: err })
}

module.exports = { instantiateWorker }
