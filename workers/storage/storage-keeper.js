'use strict'

const { DAY_MS, spanOf, retentionsOf, cutoffOf, planAgeIndex, hasTtlMonitor, formatRetention } = require('./retention')
const { isUnreachable } = require('../../lib/mongo/unreachable')
const { measureCollection, oldestOf: oldestIn, unsorted, growthPerDay, trimSamples } = require('./capacity')
const { formatBytes } = require('../../lib/shared/format-bytes')

// Documents one range delete aims at: the slice of time it covers follows
// how many the last one took (halved past twice this, doubled below half).
const DELETE_BATCH = 5000
const MIN_SLICE_MS = 1000
const BACKFILL_BATCH = 1000
// After a budget pass on a server whose sizes lag its deletes (MongoDB reuses
// deleted space after a checkpoint, about a minute): the budget is held
// again only after this long, so the same excess is not taken twice.
const BUDGET_SETTLE_MS = 120000

/**
 * What the collections of one collector hold and how long they keep it,
 * run by one worker at a time, the leader (docs/storage.md, Retention and
 * Capacity). Every worker has one, ticking; only the leader's acts:
 *
 * - at its first tick as leader: the TTL index of each collection with a
 *   retention, created or changed in place (`collMod`) where the server
 *   deletes by TTL itself; else a plain index for the sweeper's range
 *   deletes; the age field given to documents written before it existed
 *   (`legacy`); one line saying what expires, how, and what never does;
 * - every tick, where the server has no TTL monitor (the embedded
 *   mongo-java-server): what is older than the retention deleted by range
 *   deletes on the age field, a bounded slice of time each. Each document
 *   is checked by the server as it deletes it, so one a writer just moved
 *   (a stream's or call's last activity) stays;
 * - every `storageInterval`: each collection measured (capacity.js), and
 *   with `maxStorage`, the oldest day of all collections deleted while
 *   they are over it.
 *
 * `host`: `{ logger, logAtMost(key, level, fields, msg), isLeader() }`.
 * Counts what it deleted per collection and why (`stats()`).
 */
class StorageKeeper {
  /**
   * @param {object} db the native Db
   * @param {object[]} targets retention.js targets, one per collection
   * @param {{ retention?: number, retentionFor?: string[], maxStorage?: number, storageInterval: number, retentionBy?: string }} settings
   * @param {{ logger: object, logAtMost: Function, isLeader: () => boolean, now?: () => number }} host
   */
  constructor (db, targets, settings, host) {
    this.db = db
    this.settings = settings
    this.host = host
    this.now = host.now || Date.now
    const retentions = retentionsOf(targets, settings)
    this.targets = targets.map((target) => ({
      target,
      retentionMs: retentions.get(target.collection),
      expiry: 'off',
      sliceMs: 0,
      samples: [],
      measured: null,
      deleted: { retention: 0, budget: 0 },
      deletedWhenMeasured: 0 // deleted.retention + budget when measured: status says what went after `documents` was counted
    }))
    const shortest = Math.min(...this.targets.map((t) => t.retentionMs || Infinity))
    this.tickMs = Math.min(settings.storageInterval, Math.max(MIN_SLICE_MS, Math.floor(shortest / 10)))
    this.timer = null
    this.running = null
    this.ready = false // set up as leader
    this.overToday = false // over maxStorage with only today's data left (said once while it lasts)
    this.stopped = false
    this.measuredAt = 0
    this.measureAgain = false
    this.budgetAfter = 0
    this.counts = { sweeps: 0, errors: 0 }
    this.ttlBase = null
    this.ttlDeleted = null
  }

  start () {
    if (this.timer || this.stopped) return
    this.timer = setInterval(() => this.tickSoon(), this.tickMs)
    this.timer.unref()
    this.tickSoon()
  }

  // Does not wait for a pass in progress: a database that hangs must not
  // hold a worker's stop past its flushTimeout. Closing the connection ends
  // the pass (what it deleted is deleted; the next leader carries on).
  stop () {
    this.stopped = true
    clearInterval(this.timer)
    this.timer = null
  }

  /** Runs a tick now unless one is running (a worker that just became leader calls it). */
  tickSoon () {
    if (this.running || this.stopped) return this.running
    this.running = this.tick().catch((err) => {
      if (!this.stopped) this.counts.errors++
      if (!this.stopped && !isUnreachable(err)) this.host.logAtMost('storage', 'warn', { error: err.message }, `retention or capacity pass failed (${err.message}); will retry`) // a database away: the worker says it
    }).finally(() => { this.running = null })
    return this.running
  }

  // Measured every storageInterval by the ticks' start times (taken after
  // the sweep, every other one was skipped); at once after a first sweep that
  // deleted (a start on old data showed it for an interval).
  async tick () {
    const started = this.now()
    if (!this.host.isLeader()) {
      this.ready = false // a later leadership sets up again: another leader may have changed the indexes
      return
    }
    const first = !this.ready
    if (first) {
      await this.setUp()
      await this.measure(started) // the sweeper's first slices follow the measured density
    }
    const deleted = this.deletedByRetention()
    await this.sweep()
    if (first && this.deletedByRetention() > deleted) this.measureAgain = true
    if (this.measureAgain || started - this.measuredAt >= this.settings.storageInterval) await this.measure(started)
  }

  deletedByRetention () {
    return this.targets.reduce((n, t) => n + t.deleted.retention, 0)
  }

  /** Indexes, legacy documents, the start line. */
  async setUp () {
    const status = await this.db.admin().command({ serverStatus: 1 }).catch(() => null)
    const ttl = hasTtlMonitor(status, this.settings.retentionBy)
    this.ttl = ttl
    this.ttlBase = ttlCount(status)
    const budget = this.settings.maxStorage > 0
    const notes = []
    for (const t of this.targets) {
      t.expiry = t.retentionMs > 0 ? (ttl ? 'ttl' : 'sweeper') : 'off'
      const note = await this.prepareIndex(t, { ttl, wanted: t.retentionMs > 0 || budget || Boolean(t.target.declared) })
      if (note) notes.push(note)
      if ((t.retentionMs > 0 || budget) && t.target.legacy) await this.backfill(t)
    }
    this.ready = true
    this.sayStart(notes)
  }

  // The target's age index as its retention wants it; a refusal (collMod
  // where the server has none, or refuses to make a plain index TTL)
  // leaves that collection to the sweeper. Returns a note for the start line.
  async prepareIndex (t, { ttl, wanted }) {
    const { target } = t
    const collection = this.db.collection(target.collection)
    const indexes = await collection.listIndexes().toArray().catch((err) => { if (err.code === 26) return []; throw err })
    const plan = planAgeIndex(indexes, target, { retentionMs: t.retentionMs, ttl, wanted })
    try {
      if (plan.action === 'create') await collection.createIndex(plan.key, plan.options)
      if (plan.action === 'collMod') {
        await this.db.command(plan.command)
        this.host.logger.info({ collection: target.collection, index: plan.command.index.name, from: plan.from, to: plan.command.index.expireAfterSeconds },
          `${target.collection}: TTL index ${plan.command.index.name} changed in place (collMod) to expire after ${formatRetention(t.retentionMs)}`)
      }
    } catch (err) {
      if (t.expiry !== 'ttl') throw err
      t.expiry = 'sweeper'
      return `${target.collection} swept by the leader: its TTL index could not be ${plan.action === 'collMod' ? 'changed' : 'made'} (${err.message})`
    }
    if (plan.expiring !== null && plan.expiring !== undefined) {
      return `but the server's TTL index on ${target.collection}.${target.field} still deletes after ${formatRetention(plan.expiring * 1000)} (drop it to keep everything)`
    }
    return null
  }

  // Documents written before the target's age field existed get it (the
  // counters' day start from their day; a document's arrival from its _id),
  // so that they expire too; a batch at a time.
  async backfill (t) {
    const { target } = t
    const collection = this.db.collection(target.collection)
    let total = 0
    for (;;) {
      const docs = await collection.find({ [target.field]: { $exists: false }, ...target.partial }, { projection: target.legacy.projection }).limit(BACKFILL_BATCH).toArray()
      const ops = []
      for (const doc of docs) {
        const value = target.legacy.value(doc)
        // Only where still missing: a writer may have set it since the read.
        if (value) ops.push({ updateOne: { filter: { _id: doc._id, [target.field]: { $exists: false } }, update: { $set: { [target.field]: value } } } })
      }
      if (ops.length > 0) total += (await collection.bulkWrite(ops, { ordered: false })).modifiedCount
      if (docs.length < BACKFILL_BATCH || ops.length < docs.length || this.stopped) break
    }
    if (total > 0) this.host.logger.info({ collection: target.collection, field: target.field, documents: total }, `${target.collection}: gave ${total} documents of an earlier version their ${target.field}, so that they expire too`)
  }

  // One line: what expires after how long, by what, and what never does.
  sayStart (notes) {
    const expiring = this.targets.filter((t) => t.retentionMs > 0)
    const kept = this.targets.filter((t) => !(t.retentionMs > 0)).map((t) => t.target.collection)
    const budget = this.settings.maxStorage > 0 ? `; budget ${formatBytes(this.settings.maxStorage)}: over it, the oldest day of every collection is deleted first` : ''
    const fields = { retention: Object.fromEntries(this.targets.map((t) => [t.target.collection, formatRetention(t.retentionMs)])), maxStorage: this.settings.maxStorage || null }
    if (expiring.length === 0) {
      this.host.logger[budget ? 'info' : 'warn'](fields, `retention off: nothing in ${kept.join(', ')} expires${budget}${budget ? '' : ' (set --retention DURATION, or --retention-for COLLECTION=DURATION, or --max-storage SIZE)'}${notes.length ? `; ${notes.join('; ')}` : ''}`)
      return
    }
    const how = this.ttl ? 'by TTL indexes (the server\'s monitor deletes, about once a minute)' : `by the leader worker every ${formatRetention(this.tickMs)}, in batches: this server has no TTL monitor`
    const parts = expiring.map((t) => `${t.target.collection} ${formatRetention(t.retentionMs)} by ${describe(t.target)}`)
    this.host.logger.info(fields, `retention: ${parts.join(', ')}, ${how}${kept.length ? `; kept forever: ${kept.join(', ')}` : ''}${budget}${notes.length ? `; ${notes.join('; ')}` : ''}`)
  }

  // Where the server has no TTL monitor: what is older than each retention.
  async sweep () {
    const swept = this.targets.filter((t) => t.expiry === 'sweeper')
    if (swept.length === 0) return
    this.counts.sweeps++
    const now = this.now()
    for (const t of swept) {
      if (this.stopped) return
      t.deleted.retention += await this.deleteBefore(t, cutoffOf(t.target, t.retentionMs, now))
    }
  }

  /**
   * Deletes the target's documents whose age field is before `before`
   * (epoch ms), and only those matching its partial filter, oldest first,
   * by range deletes of a slice of time each (about DELETE_BATCH
   * documents); one delete without an index (each reads the whole
   * collection). Resolves with how many it deleted.
   */
  async deleteBefore (t, before) {
    const { target } = t
    const collection = this.db.collection(target.collection)
    if (unsorted(t.measured)) return (await collection.deleteMany({ ...target.partial, [target.field]: { $lt: new Date(before) } })).deletedCount
    const oldest = await this.oldestOf(t, before)
    if (oldest === null) return 0
    let from = oldest
    let slice = t.sliceMs || initialSlice(t.measured)
    let total = 0
    while (from < before && !this.stopped) {
      const to = Math.min(before, from + slice)
      const { deletedCount } = await collection.deleteMany({ ...target.partial, [target.field]: { $lt: new Date(to) } })
      total += deletedCount
      if (deletedCount > 2 * DELETE_BATCH) slice = Math.max(MIN_SLICE_MS, Math.floor(slice / 2))
      else if (deletedCount < DELETE_BATCH / 2) slice *= 2
      from = to
      await new Promise((resolve) => setImmediate(resolve))
    }
    t.sliceMs = slice
    return total
  }

  // The oldest age (epoch ms) of the target's documents (before `before`, when given), or null.
  async oldestOf (t, before = null) {
    const { field, partial } = t.target
    const range = before === null ? { $type: 'date' } : { $lt: new Date(before) }
    return oldestIn(this.db.collection(t.target.collection), { ...partial, [field]: range }, field, unsorted(t.measured))
  }

  /** Measures every collection, then holds them to the budget. */
  async measure (at = this.now()) {
    this.measureAgain = false
    for (const t of this.targets) {
      t.measured = await measureCollection(this.db, t.target)
      t.deletedWhenMeasured = t.deleted.retention + t.deleted.budget
      t.samples = trimSamples([...t.samples, { at, documents: t.measured.documents, usedBytes: t.measured.usedBytes }])
      if ((t.retentionMs > 0 || this.settings.maxStorage > 0) && t.measured.documents > 0 && t.measured.datesRead && t.measured.oldest === null) this.host.logAtMost(`undated:${t.target.collection}`, 'warn', { collection: t.target.collection, field: t.target.field }, `${t.target.collection}: ${t.measured.documents} documents and none with a date in ${t.target.field}: none expires by retention, and the storage budget cannot delete them by day (is the sink's expireBy the name of its documents' date field?)`)
    }
    this.measuredAt = at
    if (this.ttlBase !== null) this.ttlDeleted = ttlCount(await this.db.admin().command({ serverStatus: 1 }).catch(() => null)) - this.ttlBase
    if (this.settings.maxStorage > 0 && at >= this.budgetAfter) await this.holdBudget(at)
  }

  /**
   * Over `maxStorage`: the oldest day of all the collections (by their age
   * fields) is deleted from each, then the next, until what that freed
   * (documents deleted × the collection's bytes per document) covers the
   * excess. Never today's: a budget that cannot hold one day says so.
   */
  async holdBudget (now) {
    const max = this.settings.maxStorage
    let excess = this.usedBytes() - max
    if (excess <= 0) {
      this.overToday = false
      return
    }
    const today = startOfDay(now)
    while (excess > 0 && !this.stopped && this.host.isLeader()) {
      // Of what each may lose: a bucket (a minute, kept state's span) still written to is not past.
      const oldest = Math.min(...await Promise.all(this.targets.map((t) => this.oldestOf(t, now - spanOf(t.target)).then((v) => v === null ? Infinity : v))))
      if (oldest >= today) {
        // Said once while it lasts (each measure finds it again), and by status.
        const left = Math.round(max + excess) // estimated, after what this pass deleted
        if (!this.overToday) this.host.logger.error({ usedBytes: left, maxStorage: max }, `storage over budget (${formatBytes(left)} of ${formatBytes(max)}) with nothing older than today left to delete: today's data alone is over it (raise --max-storage, or shorten --retention)`)
        this.overToday = true
        break
      }
      this.overToday = false
      const dayEnd = startOfDay(oldest) + DAY_MS
      const deleted = {}
      const excessBefore = excess
      for (const t of this.targets) {
        const n = await this.deleteBefore(t, Math.min(dayEnd, now - spanOf(t.target)))
        if (n === 0) continue
        deleted[t.target.collection] = n
        t.deleted.budget += n
        excess -= n * bytesPerDocument(t.measured)
      }
      const day = new Date(dayEnd - DAY_MS).toISOString().slice(0, 10)
      const before = Math.round(max + excessBefore) // what was estimated in use before this day went
      this.host.logger.warn({ day, deleted, usedBytes: before, maxStorage: max },
        `storage over budget (${formatBytes(before)} of ${formatBytes(max)}): deleted ${day}, the oldest day (${Object.entries(deleted).map(([name, n]) => `${name} ${n}`).join(', ') || 'nothing'}), about ${formatBytes(Math.max(0, excessBefore - excess))}`)
      if (excess === excessBefore) break // nothing deleted, or of a size unknown (measured empty): the next tick measures again
    }
    this.budgetAfter = this.ttl ? now + BUDGET_SETTLE_MS : 0
    this.measureAgain = true // at the next tick
  }

  usedBytes () {
    return this.targets.reduce((sum, t) => sum + (t.measured ? t.measured.usedBytes : 0), 0)
  }

  /** The leader's figures once it has measured, null before and in the other workers (docs/counters.md, storage). */
  stats () {
    if (!this.ready || !this.measuredAt || !this.host.isLeader()) return null
    const collections = {}
    let growth = null
    for (const t of this.targets) {
      const figures = collections[t.target.collection] = collectionFigures(t)
      if (figures.growthPerDay) growth = (growth || 0) + figures.growthPerDay.bytes
    }
    const max = this.settings.maxStorage || null
    const used = this.usedBytes()
    return {
      expiry: this.ttl ? 'ttl' : 'sweeper',
      maxStorage: max,
      usedBytes: used,
      daysLeft: max && growth !== null ? daysLeft(max, used, growth) : null,
      overToday: this.overToday, // over maxStorage with nothing older than today to delete
      estimated: this.targets.some((t) => t.measured && t.measured.estimated),
      measuredAt: this.measuredAt,
      sweeps: this.counts.sweeps,
      errors: this.counts.errors,
      ttlDeleted: this.ttlDeleted,
      collections
    }
  }
}

// One collection's figures: as last measured, its growth, what it keeps and what was deleted.
function collectionFigures (t) {
  const m = t.measured
  return {
    field: t.target.field,
    retentionMs: t.retentionMs,
    expiry: t.expiry,
    documents: m ? m.documents : null,
    dataBytes: m ? m.dataBytes : null,
    indexBytes: m ? m.indexBytes : null,
    usedBytes: m ? m.usedBytes : null,
    estimated: m ? m.estimated : false,
    oldest: m && m.oldest ? m.oldest.getTime() : null,
    newest: m && m.newest ? m.newest.getTime() : null,
    growthPerDay: t.samples.length > 1 ? growthPerDay(t.samples, t.retentionMs) : null,
    // What the server's TTL monitor deletes is not counted per collection (ttlDeleted: the server's total).
    deleted: { retention: t.expiry === 'ttl' ? null : t.deleted.retention, budget: t.deleted.budget },
    deletedSinceMeasured: m ? t.deleted.retention + t.deleted.budget - t.deletedWhenMeasured : 0
  }
}

function describe (target) {
  if (target.perDay) return `day (${target.field})`
  return target.partial ? `${target.field} once ended` : target.field
}

// A first slice holding about DELETE_BATCH documents, from the measured
// density; a minute when nothing is measured yet.
function initialSlice (measured) {
  if (!measured || !measured.oldest || !measured.newest || measured.documents === 0) return 60000
  const span = Math.max(1, measured.newest - measured.oldest)
  return Math.max(MIN_SLICE_MS, Math.floor(span * DELETE_BATCH / measured.documents))
}

function bytesPerDocument (measured) {
  return measured && measured.documents > 0 ? measured.usedBytes / measured.documents : 0
}

// 0 only once the budget is reached: under it, at least a thousandth of a
// day (rounded to 0.1 it read 0, OVER BUDGET, for anything under 1.2 hours).
function daysLeft (max, used, growthPerDay) {
  if (used >= max) return 0
  return growthPerDay > 0 ? Math.max(0.001, Math.round((max - used) / growthPerDay * 1000) / 1000) : null
}

function startOfDay (ms) {
  return ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS)
}

function ttlCount (status) {
  const ttl = status && status.metrics && status.metrics.ttl
  return ttl && ttl.deletedDocuments !== undefined ? Number(ttl.deletedDocuments) : null
}

module.exports = { StorageKeeper, startOfDay }
