"""The load test's peer (`make loadtest`): the PyPI `applepay` library's EC_v1 decryption behind
Starlette on uvicorn, the way a small Python service decrypts Apple Pay tokens. It does a third of
Paywarden's work: a software key, no signature or certificate-chain check, no replay ledger.

POST /v1/payment-tokens/decrypt with a token (PKPaymentToken or its paymentData) answers the
decrypted payload. Its key and certificate come from the load test's PKI (PEER_CERTIFICATE,
PEER_KEY; PEER_ROOT_DER for the library's CA arguments, which it parses and never uses).
"""
import json
import os

from applepay.payment import Payment
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


def _read(name):
    with open(os.environ[name], "rb") as file:
        return file.read()


_root = _read("PEER_ROOT_DER")
_payment = Payment(_read("PEER_CERTIFICATE"), _read("PEER_KEY"), root_ca_der=_root, aai_ca_der=_root)


async def decrypt(request):
    try:
        token = json.loads(await request.body())
        token = token.get("paymentData", token)
        plaintext = _payment.decrypt(token["header"]["ephemeralPublicKey"], token["data"])
    except Exception as error:  # the peer answers what it cannot read with 400, as Paywarden does
        return JSONResponse({"error": type(error).__name__}, status_code=400)
    return Response(plaintext, media_type="application/json")


async def ready(request):
    return Response(b"ok")


app = Starlette(routes=[Route("/v1/payment-tokens/decrypt", decrypt, methods=["POST"]), Route("/ready", ready)])
