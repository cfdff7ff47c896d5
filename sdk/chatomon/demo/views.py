"""The demo's landing page: what the demo is, where to log in, the chat widget."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .models import Material, Part, Project, Supplier
from .prompts import SUGGESTED_PROMPTS


def home(request: HttpRequest) -> HttpResponse:
    """The landing page, with the size of the data set and, once logged in, the chat."""
    counts = {
        "materials": Material.objects.count(),
        "suppliers": Supplier.objects.count(),
        "parts": Part.objects.count(),
        "projects": Project.objects.count(),
    }
    context = {"counts": counts, "suggestions": SUGGESTED_PROMPTS}
    return render(request, "chatomon_demo/home.html", context)


def no_icon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico on every page: answer, so the log stays for real problems."""
    return HttpResponse(status=204)
