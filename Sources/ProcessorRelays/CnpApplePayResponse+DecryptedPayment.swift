import ApplePay
import PaywardenServices
import ProcessorMessages

extension CnpApplePayResponse {
    /// cnpAPI's `<applepayResponse>` from the decrypted payload: what the registration answer
    /// (cnpAPI) and the decryptblob answer (Radial) both return to the merchant. Nil without a payload.
    public init?(_ payment: DecryptedPayment?) {
        guard let payment else { return nil }
        self.init(
            applicationExpirationDate: payment.applicationExpirationDate, currencyCode: payment.currencyCode,
            transactionAmount: payment.transactionAmount, cardholderName: payment.cardholderName,
            deviceManufacturerIdentifier: payment.deviceManufacturerIdentifier, paymentDataType: payment.paymentDataType,
            onlinePaymentCryptogram: payment.credential.onlinePaymentCryptogram?.revealed, eciIndicator: payment.credential.eciIndicator)
    }
}
