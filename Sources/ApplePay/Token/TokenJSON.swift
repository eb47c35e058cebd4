import PaywardenPrimitives

/// The JSON reader behind ``PaymentToken/init(json:)`` and ``DecryptedPayment/init(json:)`` is
/// the strict one every module shares, with its default rules: nesting to 64 levels, no byte
/// order mark, names compared as bytes.
///
/// Foundation's JSON reader built a dictionary of `Any` per token and bridged every string: about
/// a tenth of a decryption's CPU on Linux (docs/operations.md, "Performance"). This reader accepts
/// no more than it did and refuses more: anything but UTF-8 (it detected UTF-16 and UTF-32) and a
/// byte order mark, trailing commas, nesting past 64 levels, and a member name repeated in one object.
typealias TokenJSON = StrictJSON
