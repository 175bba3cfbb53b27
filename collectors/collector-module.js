'use strict'

/**
 * A collector module as app/collector-registry.js takes it: `{ description,
 * Collector, Config, Worker }`. The worker (mongoose and the MongoDB
 * driver) is loaded where it runs, in the workers, when asked for: the
 * master that loads the module has no use for it.
 *
 * @param {{ description: string, Collector: Function, Config: Function, workerPath: string }} parts
 */
function collectorModule ({ description, Collector, Config, workerPath }) {
  const module = { description, Collector, Config }
  Object.defineProperty(module, 'Worker', { enumerable: true, get: () => require(workerPath) })
  return module
}

module.exports = { collectorModule }
