import Hummingbird
import PaywardenServices

/// `{"<key>":<verbatim JSON>, …the envelope's members…}`: no field of the verbatim payload is
/// dropped, reordered or re-encoded (a number keeps its spelling), and the rest is Codable.
struct VerbatimJSONResponse<Envelope: Encodable & Sendable>: ResponseGenerator {
    let key: String
    let verbatim: [UInt8]
    let envelope: Envelope
    var status: HTTPResponse.Status = .ok

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = try JSONResponses.splice(key: key, verbatim: verbatim, envelope: envelope)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: body))
    }
}
