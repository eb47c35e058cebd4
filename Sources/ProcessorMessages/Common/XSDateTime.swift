import Foundation
import PaywardenPrimitives

/// `xs:dateTime` text in UTC, computed arithmetically (``UTCDateTime``: no shared formatter, no
/// locale, thread-safe).
enum XSDateTime {
    /// `2019-04-19T19:29:45`: cnpAPI's `responseTime`, "Date and Time in GMT" without a zone suffix,
    /// as Worldpay's examples show it.
    static func cnp(_ date: Date) -> String { format(date, zone: "") }

    /// `2012-01-11T14:19:05+00:00`: Radial's `CreateTimestamp` ("ISO 8601 … with offset from UTC").
    static func withOffset(_ date: Date) -> String { format(date, zone: "+00:00") }

    private static func format(_ date: Date, zone: String) -> String {
        UTCDateTime.text(secondsSince1970: Int(date.timeIntervalSince1970.rounded(.down)), zone: zone)
    }
}
