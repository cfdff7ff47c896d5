"""The Django app of chatomon (`INSTALLED_APPS += ["chatomon.django"]`, label "chatomon").

Importing this package needs no settings; the models load with the app registry.
"""
