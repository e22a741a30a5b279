package mlm
