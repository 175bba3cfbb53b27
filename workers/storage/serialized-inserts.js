'use strict'

const path = require('node:path')
const { mongo } = require('mongoose') // the driver mongoose uses: one copy loaded
const { writeDocument } = require('./bson-writer')

/*
 * Inserts of documents serialized to BSON when a sink takes them, not when
 * they are written. A documents sink holds what it took until its flush
 * (up to flushInterval, or maxBatch documents): held as objects, every
 * document outlived a few young-generation collections and was promoted,
 * and a third of a syslog worker's CPU went to the garbage collector. Held
 * as its bytes, the object dies young; the bytes are what the driver would
 * have made at the flush anyway, and it sends them as they are: its insert
 * command takes documents serialized beforehand (the OP_MSG document
 * sequence its own bulk writes use). At 10,000 syslog lines/s this took
 * 0.82x the CPU of the object path (benchmarks/syslog-vs-syslog-ng.js).
 *
 * That entry point is the driver's internal one, so it is used only with
 * the driver line it was written against (7.x), checked at load; with any
 * other, or should it fail to load, documents are held and written as
 * objects (bulkWrite), as before. `serializedInserts(collection)` gives an
 * object with the `bulkWrite(ops, options)` that storage/write-accounting.js
 * calls, for ops `{ insertOne: { document } }`, a document held Serialized
 * (or not, then serialized there); it answers as the driver's bulkWrite does: a result with
 * `insertedCount`, or an error carrying `writeErrors` and `result`.
 */

const DRIVER = loadDriver()

function loadDriver () {
  try {
    const from = { paths: [path.dirname(require.resolve('mongoose'))] }
    const lib = path.dirname(require.resolve('mongodb/lib/operations/insert', from))
    const { version } = require(require.resolve('mongodb/package.json', from))
    if (!/^7\./.test(version)) return null
    const { InsertOperation } = require(path.join(lib, 'insert'))
    const { executeOperation } = require(path.join(lib, 'execute_operation'))
    const { resolveOptions } = require(path.join(lib, '..', 'utils'))
    if (typeof InsertOperation !== 'function' || typeof executeOperation !== 'function' || typeof resolveOptions !== 'function') return null
    return { InsertOperation, executeOperation, resolveOptions }
  } catch {
    return null
  }
}

/** Whether documents can be held serialized (this driver takes them so). */
const SERIALIZED = DRIVER !== null

/** A document held as its BSON. */
class Serialized {
  constructor (bytes) {
    this.bytes = bytes
  }
}

// What the insert command's sequence lists beside each document's bytes
// (the driver keeps it for its command events): never serialized.
const UNSERIALIZED = Object.freeze({})

// The driver's defaults (a client may set others: then a document is held
// as an object, and serialized when written with its collection's).
const BSON_OPTIONS = Object.freeze({ checkKeys: false, serializeFunctions: false, ignoreUndefined: false })

/** A document's bytes, as the driver makes them by default (no key checks, undefined stored as null). */
function serialize (document, options = BSON_OPTIONS) {
  const bytes = options === BSON_OPTIONS ? writeDocument(document) : null
  return bytes !== null ? bytes : mongo.BSON.serialize(document, options)
}

/** Whether a collection serializes as serialize() does, so that documents may be held serialized for it. */
function serializesAsHeld (collection) {
  const options = collection.bsonOptions || {}
  return Boolean(options.serializeFunctions) === BSON_OPTIONS.serializeFunctions && Boolean(options.ignoreUndefined) === BSON_OPTIONS.ignoreUndefined
}

function serializedInserts (collection) {
  return {
    async bulkWrite (ops, options = {}) {
      const own = collection.bsonOptions
      const bytes = ops.map(({ insertOne: { document } }) => document instanceof Serialized ? document.bytes : serialize(document, { checkKeys: false, serializeFunctions: Boolean(own.serializeFunctions), ignoreUndefined: Boolean(own.ignoreUndefined) }))
      const operation = new DRIVER.InsertOperation(collection.s.namespace, bytes.map(() => UNSERIALIZED), DRIVER.resolveOptions(collection, { ...options, ordered: false }), bytes)
      const reply = await DRIVER.executeOperation(collection.client, operation)
      if (reply.writeConcernError) {
        throw Object.assign(new Error(`write concern error: ${reply.writeConcernError.errmsg}`), { name: 'MongoWriteConcernError', writeErrors: [] })
      }
      const result = { insertedCount: reply.n || 0, matchedCount: 0, upsertedCount: 0 }
      if (!reply.writeErrors || reply.writeErrors.length === 0) return result
      throw Object.assign(new Error(`${reply.writeErrors.length} of ${ops.length} inserts refused (${reply.writeErrors[0].code}: ${reply.writeErrors[0].errmsg})`), { name: 'MongoBulkWriteError', writeErrors: reply.writeErrors, result })
    }
  }
}

module.exports = { SERIALIZED, Serialized, serialize, serializesAsHeld, serializedInserts }
