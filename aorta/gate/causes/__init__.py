"""Why a verdict moved: the evidence each run keeps, the kernels that changed, the named causes and their words."""
