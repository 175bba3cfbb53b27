'use strict'

// Whether a datagram is SRTCP (RFC 3711 §3.4): RTCP encrypted but for its
// first eight bytes, then the E flag and a 31-bit SRTCP index (in clear,
// counting from 0), then the authentication tag. Read as plain RTCP its
// first packet's header passes and what follows is noise: refused under
// whatever reason the noise met (bad-version, bad-length), and now and then
// taken whole, an SR whose sender info and report blocks were ciphertext
// (FFmpeg's SRTCP with a 4-byte tag: 1 datagram in 3). The index word, E
// set and index under 2^16 (a call's RTCP every few seconds counts for
// days before it passes), is looked for after a compound of whole 32-bit
// words past the first packet, where each layout in use puts it: before a
// tag of 10 bytes (AES-CM with HMAC-SHA1-80, SDES-SRTP's and DTLS-SRTP's
// default) or 4 (HMAC-SHA1-32 as FFmpeg sends it), or last (AES-GCM, RFC
// 7714 §17, whose 16-byte tag is encrypted with the rest); an MKI (RFC
// 3711 §3.4, up to 4 bytes as SDES offers it) between the index word and
// the tag. Checked with libsrtp's (GStreamer's srtpenc) and FFmpeg's.

// The bytes after the index word: an HMAC tag of 10 or 4 bytes, or none (AEAD).
const TAG_BYTES = [10, 4, 0]
const MAX_MKI_BYTES = 4

/** The first packet's end, from its length field (4-byte words less one). */
function firstPacketEnd (buf) {
  return (((buf[2] << 8) | buf[3]) + 1) * 4
}

/** Whether `buf` ends as SRTCP does: see above. */
function looksLikeSrtcp (buf) {
  if (buf.length < 8 || buf[0] >> 6 !== 2) return false
  const end = firstPacketEnd(buf)
  for (let mki = 0; mki <= MAX_MKI_BYTES; mki++) {
    for (const tag of TAG_BYTES) {
      if (mki > 0 && tag === 4) continue // FFmpeg's HMAC-SHA1-32 sends no MKI; left out, a plain compound ending in a type-0 word is not taken for one
      const index = buf.length - tag - mki - 4
      if (index >= end && index % 4 === 0 && buf[index] === 0x80 && buf[index + 1] === 0x00) return true
    }
  }
  return false
}

module.exports = { looksLikeSrtcp }
