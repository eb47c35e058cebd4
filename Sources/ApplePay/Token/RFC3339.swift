import Foundation
import PaywardenPrimitives

/// UTC timestamps as RFC 3339 (`2014-10-27T19:51:43Z`), computed directly (``UTCDateTime``):
/// Foundation's date formatters go through ICU and cost more than the rest of a response.
public enum RFC3339 {
    public static func string(from date: Date) -> String {
        UTCDateTime.text(secondsSince1970: Int(date.timeIntervalSince1970.rounded(.down)), zone: "Z")
    }
}
