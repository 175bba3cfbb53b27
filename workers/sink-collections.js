'use strict'

// What a sink's collection is given (sink-stores.js, documents-sink.js): the
// indexes its declaration names, and the target retention and the storage
// budget reach by its date field (storage/retention.js).

// The index on the retention's date field alone is the StorageKeeper's
// (plain, or TTL where the server expires by it): created there, not here,
// lest a plain one be asked for over the TTL one (IndexOptionsConflict).
async function createIndexes (collection, indexes = [], expireBy = null) {
  const own = expireBy ? indexes.filter((index) => !isAgeIndex(index, expireBy)) : indexes
  if (own.length > 0) await collection.createIndexes(own)
}

function isAgeIndex (index, field) {
  return JSON.stringify(index.key) === JSON.stringify({ [field]: 1 })
}

function ageTarget (spec) {
  return { collection: spec.collection, field: spec.expireBy, ...(spec.expireSpan ? { span: spec.expireSpan } : {}), declared: (spec.indexes || []).some((index) => isAgeIndex(index, spec.expireBy)) }
}

module.exports = { createIndexes, ageTarget }
