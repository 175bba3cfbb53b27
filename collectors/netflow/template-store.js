'use strict'

// Where templates live between datagrams: a store the caller provides, one
// per exporter (the exporter's address is the caller's scope, so it is not
// part of the key). A store is four methods on string keys and
// JSON-serializable values, so the framework can keep it durable:
//   get(key) → value | undefined, set(key, value), delete(key),
//   keys(prefix) → the keys starting with prefix (used only by an IPFIX
//   "withdraw all templates", which has to find them; more keys are fine,
//   so a plain Map is a store too, an unbounded one).
// Keys are `${version}|${domain}|${templateId}` for templates, and
// `${version}|${domain}|init` for an IPFIX domain's systemInitTimeMilliseconds
// (learned from an options record; flows' sysUpTime times count from it).
// How many templates an exporter may hold is the store's bound: the
// in-memory one below evicts the least recently written past `max`.
//
// A datagram's changes are staged and written only once it is accepted,
// so a refused datagram leaves the store as it was.

const { sameTemplate } = require('./template-set')

const INIT = 'init'

/**
 * A Map-backed store, for tests and for a collector that keeps templates in
 * memory. `max` bounds the keys (templates and init times) it holds.
 * @param {{ max?: number }} [options]
 */
function createMemoryTemplateStore ({ max = 4096 } = {}) {
  if (!Number.isInteger(max) || max < 1) throw new TypeError(`max must be a positive integer, got ${max}`)
  const map = new Map()
  const store = {
    evicted: 0,
    get size () { return map.size },
    get: (key) => map.get(key),
    set (key, value) {
      map.delete(key)
      if (map.size >= max) {
        map.delete(map.keys().next().value)
        store.evicted++
      }
      map.set(key, value)
    },
    delete: (key) => map.delete(key),
    keys: (prefix) => [...map.keys()].filter((key) => key.startsWith(prefix))
  }
  return store
}

/**
 * One datagram's view of its domain's templates: reads see the datagram's
 * own earlier changes, nothing reaches the store before commit().
 * @param {object} store the caller's store
 * @param {number} version 9 or 10
 * @param {number} domain source ID / observation domain ID
 */
function stageTemplates (store, version, domain) {
  const prefix = `${version}|${domain}|`
  const staged = new Map() // key → value, or null for withdrawn
  const withdrawnAll = { data: false, options: false }
  const read = (key) => {
    if (staged.has(key)) return staged.get(key) || undefined
    const value = store.get(key)
    return value?.fields && withdrawnAll[kindOf(value)] ? undefined : value
  }
  return {
    get: (id) => read(prefix + id),
    // A template sent again unchanged stays the stored value, so what was
    // compiled from it is reused and nothing is written.
    learn (id, template) {
      const current = read(prefix + id)
      if (!sameTemplate(current, template)) staged.set(prefix + id, template)
    },
    withdraw: (id) => staged.set(prefix + id, null),
    withdrawAll (options) {
      withdrawnAll[options ? 'options' : 'data'] = true
      for (const [key, value] of staged) if (value && kindOf(value) === (options ? 'options' : 'data')) staged.set(key, null)
    },
    systemInit: () => read(prefix + INIT)?.systemInit,
    setSystemInit: (ms) => staged.set(prefix + INIT, { systemInit: ms }),
    /** Writes the changes; returns how many templates were learned (new or changed) and withdrawn. */
    commit: () => commitStaged(store, prefix, staged, withdrawnAll)
  }
}

const kindOf = (template) => template.scope > 0 ? 'options' : 'data'

function commitStaged (store, prefix, staged, withdrawnAll) {
  let learned = 0
  let withdrawn = 0
  for (const kind of ['data', 'options']) {
    if (!withdrawnAll[kind]) continue
    for (const key of store.keys(prefix)) {
      if (!key.startsWith(prefix)) continue // a plain Map's keys() takes no prefix
      const value = store.get(key)
      if (value?.fields && kindOf(value) === kind && !staged.has(key)) { store.delete(key); withdrawn++ }
    }
  }
  for (const [key, value] of staged) {
    const before = store.get(key)
    if (value === null) {
      if (before !== undefined) { store.delete(key); withdrawn++ }
    } else if (value.fields ? !sameTemplate(before, value) : before?.systemInit !== value.systemInit) {
      store.set(key, value)
      if (value.fields) learned++
    }
  }
  return { learned, withdrawn }
}

module.exports = { createMemoryTemplateStore, stageTemplates }
