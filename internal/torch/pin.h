// Page-locked copies of tensors, for non-blocking copies to a GPU.
#ifndef CONVREP_PIN_H
#define CONVREP_PIN_H
#ifdef __cplusplus
extern "C" {
#endif
// *out is a new tensor handle: tensor (a torch::Tensor*) in page-locked memory of the default accelerator.
// NULL on success, else a malloc'ed error message.
char *convrep_pin_memory(void *tensor, void **out);
#ifdef __cplusplus
}
#endif
#endif
