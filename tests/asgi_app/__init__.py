"""A Django project for the transport tests: settings, URLs, ASGI application, providers.

In-process tests use its URLs and middleware through `override_settings`; the server
tests run it in real uvicorn processes (`DJANGO_SETTINGS_MODULE=tests.asgi_app.settings`).
"""
