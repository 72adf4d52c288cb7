# Read-only hosted explorer (e.g. a Hugging Face Docker Space: port 7860, UID 1000).
# Installs only the explorer's packages: the container never runs dataset code and starts no runner.
# The public base; scripts/build_image.sh passes a Debian-made stand-in where it cannot be pulled.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

RUN useradd --create-home --uid 1000 user
WORKDIR /home/user/app
COPY --chown=user requirements-explorer.txt .
RUN pip install --no-cache-dir -r requirements-explorer.txt
COPY --chown=user . .

USER user
ENV HOME=/home/user \
    PYTHONUNBUFFERED=1 \
    TLX_READ_ONLY=1 \
    TLX_STORE=/home/user/store \
    PORT=7860
# The embedded sample by default, built at build time. For the full dataset, either build with
#   --build-arg TLX_SOURCE=hf://datasets/makora-ai/triton-gpu-latency   (store baked into the image), or
# set TLX_BUILD_SOURCE at run time (store built at first start, into TLX_STORE: mount a volume there).
ARG TLX_SOURCE=data/sample
RUN python -m queries ingest "$TLX_SOURCE" --store "$TLX_STORE"

EXPOSE 7860
CMD ["sh", "scripts/docker_start.sh"]
