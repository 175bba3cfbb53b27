'use strict'

const path = require('node:path')
const Worker = require('../workers/worker')
const InvalidOptionError = require('../exceptions/invalid-option-error')

/** Absolute path of a worker module, checked in the master before forking. */
function resolveWorkerModule (worker, base = process.cwd()) {
  if (typeof worker !== 'string' || worker.length === 0) {
    throw new InvalidOptionError('worker', worker, 'must be the path of a worker module')
  }
  const candidate = path.isAbsolute(worker) || worker.startsWith('.') ? path.resolve(base, worker) : worker
  try {
    return require.resolve(candidate)
  } catch {
    throw new InvalidOptionError('worker', worker, `must be a module that can be loaded (looked for ${candidate})`)
  }
}

/**
 * Builds the worker from a module that exports a Worker subclass, a plain
 * object with doWork(), or a function `(options) => worker`.
 */
function instantiateWorker (modulePath, options) {
  let exported = require(modulePath)
  if (exported && exported.default) exported = exported.default
  if (typeof exported === 'function' && exported.prototype && typeof exported.prototype.doWork === 'function') {
    return new exported(options) // eslint-disable-line new-cap
  }
  if (typeof exported === 'function') return adopt(exported(options), modulePath)
  return adopt(exported, modulePath)
}

const HOOKS = ['init', 'flush', 'close', 'stats', 'onLeader']

// Gives a worker that does not extend Worker the base class's no-op hooks.
function adopt (candidate, modulePath) {
  if (!candidate || typeof candidate.doWork !== 'function') {
    throw new InvalidOptionError('worker', modulePath, 'must export a Worker subclass, an object with doWork(), or a factory returning one')
  }
  if (candidate instanceof Worker) return candidate
  for (const hook of HOOKS) {
    if (typeof candidate[hook] !== 'function') candidate[hook] = Worker.prototype[hook]
  }
  return candidate
}

module.exports = { resolveWorkerModule, instantiateWorker }
