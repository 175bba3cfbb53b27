'use strict'

/**
 * A definition's `tally`: per tally, how many decoded records carried each
 * name its function gives (one name, a list, or none), reported as the
 * worker's figures under the tally's name (`{ deviations: { name: n } }`).
 */
class Tallies {
  /** @param {Object<string, (record: object) => string|string[]|null>} [tally] */
  constructor (tally = {}) {
    this.tally = tally
    this.names = Object.keys(tally)
    this.counts = Object.fromEntries(this.names.map((name) => [name, {}]))
  }

  /** Counts the names of a record, or of each record of a list. */
  add (records) {
    if (this.names.length === 0) return
    if (!Array.isArray(records)) return this.addOne(records)
    for (let i = 0; i < records.length; i++) this.addOne(records[i])
  }

  addOne (record) {
    for (let i = 0; i < this.names.length; i++) {
      const names = this.tally[this.names[i]](record)
      if (!names) continue
      const counts = this.counts[this.names[i]]
      for (const n of Array.isArray(names) ? names : [names]) counts[n] = (counts[n] || 0) + 1
    }
  }

  stats () {
    return Object.fromEntries(this.names.map((name) => [name, { ...this.counts[name] }]))
  }
}

module.exports = { Tallies }
