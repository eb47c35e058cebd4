import Foundation

/// One benchmark line: Paywarden's rate next to the raw module's, each the median of its rounds.
struct BenchRow {
    let operation: String
    let rawName: String
    let workers: Int
    var raw: [Double] = []
    var layer: [Double] = []
    /// Optional second Paywarden figure (callers hopping from the cooperative pool).
    var hopping: [Double] = []

    static func print(_ rows: [BenchRow], paywardenColumn: String, target: String) {
        let hasHop = rows.contains { !$0.hopping.isEmpty }
        var header =
            column("operation", 44) + column("workers", 9) + column("raw", 16) + column("raw ops/s", 11)
            + column(paywardenColumn, 14) + column("ratio", 7)
        if hasHop { header += column("hop ops/s", 11) + "hop ratio" }
        Swift.print(header)
        for row in rows {
            let raw = median(row.raw)
            var line =
                column(row.operation, 44) + column(String(row.workers), 9) + column("hsm_bench " + row.rawName, 16)
                + column(format(raw), 11) + column(format(median(row.layer)), 14)
                + column(String(format: "%.2f", median(row.layer) / max(raw, 1)), 7)
            if hasHop, !row.hopping.isEmpty {
                line += column(format(median(row.hopping)), 11) + String(format: "%.2f", median(row.hopping) / max(raw, 1))
            }
            Swift.print(line)
        }
        Swift.print(target)
    }

    static func column(_ text: String, _ width: Int) -> String {
        text.padding(toLength: max(width, text.count + 1), withPad: " ", startingAt: 0)
    }

    static func format(_ value: Double) -> String { String(format: "%.0f", value) }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}
