'use strict'

/**
 * A definition worker's stats (workers/definition-worker.js): its counts,
 * each store's own figures by collection, the definition's (`stats`), what
 * it holds in memory (stateStats).
 * @param {import('./definition-worker')} worker
 */
function definitionStats (worker) {
  const sinks = {}
  let dbWrites = 0
  for (const store of worker.stores) {
    const s = sinks[store.spec.collection] = store.stats()
    dbWrites += s.writes
  }
  // A streams sink's figures are the worker's own too, as StreamWorker reports them.
  const shared = Object.assign({}, ...worker.sinks.map((sink) => sink.workerStats ? sink.workerStats() : {}))
  return {
    ...shared,
    messages: worker.counts.messages,
    records: worker.counts.records,
    malformed: { ...worker.counts.malformed },
    dropped: worker.counts.dropped,
    ...(worker.newKeys ? { newKeys: worker.newKeys.stats() } : {}),
    ...worker.tallies.stats(),
    tallied: worker.tallies.names, // which of these are tallies (collector status prints them)
    ...(worker.definition.stats ? worker.definition.stats(worker.enrichState) : {}),
    pending: worker.stores.reduce((n, sink) => n + sink.size, 0),
    sinks,
    dbWrites,
    ...worker.dbStats(),
    ...worker.stateStats()
  }
}

/**
 * `state` (the worker's watermarks, `{ held, evicted }`) with what the
 * sinks remember (streams: the sides each sender holds), the definition's
 * state (`memory`) and the new-key limit's known keys.
 */
function withStoresState (state, worker) {
  const parts = worker.stores.filter((sink) => sink.stateStats).map((sink) => sink.stateStats())
  if (worker.definition.memory) parts.push(worker.definition.memory(worker.enrichState))
  if (worker.newKeys) parts.push({ held: { knownKeys: worker.newKeys.known.size }, evicted: { knownKeys: worker.newKeys.known.evicted } })
  for (const own of parts) {
    Object.assign(state.held, own.held)
    Object.assign(state.evicted, own.evicted)
  }
  return state
}

module.exports = { definitionStats, withStoresState }
