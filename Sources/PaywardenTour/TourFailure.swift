/// A step that did not give its documented answer: what was expected and what came back.
struct TourFailure: Error, CustomStringConvertible {
    let message: String

    init(_ message: String) {
        self.message = message
    }

    var description: String { message }

    /// Fails the step with `message` unless `condition` holds.
    static func unless(_ condition: Bool, _ message: @autoclosure () -> String) throws {
        if !condition { throw TourFailure(message()) }
    }
}
